#!/usr/bin/env bash
# Ray on the GPU machine (no registries): ray==2.60.0 unpacked from .rayw/ray_site.tar.xz (the wheel without
# jars/ and rllib/, xz: 30 MB; made by tests/gpu/pack_ray.sh), plus the wheels of the
# dependencies the image lacks, into /tmp/site3. Then a smoke test: a Ray task with num_gpus=1.
set -e
mkdir -p /tmp/site3 && tar xJf .rayw/ray_site.tar.xz -C /tmp/site3
missing=""
for pair in click:click msgpack:msgpack packaging:packaging google.protobuf:protobuf filelock:filelock jsonschema:jsonschema yaml:pyyaml requests:requests attrs:attrs certifi:certifi charset_normalizer:charset_normalizer idna:idna jsonschema_specifications:jsonschema_specifications referencing:referencing rpds:rpds_py urllib3:urllib3 typing_extensions:typing_extensions; do
  m=${pair%%:*}; w=${pair##*:}
  python3 -c "import $m" 2>/dev/null || missing="$missing $(ls .rayw/${w}-*.whl)"
done
echo "missing: $missing"
[ -n "$missing" ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site3 $missing
pip install -q --no-index --no-deps --target /tmp/site2 .whl/*.whl 2>&1 | tail -2
mv .rayw /tmp/rayw
export PYTHONPATH=/tmp/site3:/tmp/site2:$PWD
python3 -c "import ray, typer, git; print('ray', ray.__version__)"
python3 - <<'PY'
import ray, time
t=time.time(); ray.init(include_dashboard=False); print("init", round(time.time()-t,1), ray.cluster_resources())
@ray.remote(num_gpus=1)
def f():
    import os, torch; return os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.get_device_name(0)
print(ray.get(f.remote())); ray.shutdown()
PY
nproc; free -g | head -2; df -h /tmp | tail -1
