"""The docs beside the README, read as a newcomer reads them: their examples load as written and
their tables name what the repository holds."""
import re

from bisectk.spec import load_spec
from tests.e2e import readme as R

DOCS = R.ROOT / "docs"


def test_the_contracts_spec_example_loads_as_written(tmp_path):
    """docs/CONTRACTS.md's spec named a placeholder {arrive} that no factor had, an ordinal factor
    (`stages`) outside [good]/[bad] and metrics pipeline.py never prints: it did not load."""
    (block,) = re.findall(r"```toml\n(.*?)```", (DOCS / "CONTRACTS.md").read_text(), re.S)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "spec.toml").write_text(block)
    spec = load_spec(tmp_path / "spec.toml")
    assert spec.ordinal == {"depth": [1, 2, 3, 4]} and spec.build_timeout == 600
    assert {t.metric for t in spec.thresholds} == {"mismatches"} and spec.slow_metric == "us_per_tile"
    # the metrics it names are the ones its subject prints
    assert all(m in (R.ROOT / "kernels/cpu/pipeline.py").read_text() for m in ("mismatches", "us_per_tile"))


def test_the_contracts_links_lead_somewhere():
    """Every relative link of docs/CONTRACTS.md names a file of the repository (it named
    ../shared/DESIGN.md, outside it)."""
    text = (DOCS / "CONTRACTS.md").read_text()
    for target in re.findall(r"\(see ([\w./-]+\.md)\)", text):
        assert (DOCS / target).resolve().is_file(), target


def test_the_variants_readme_names_every_cpu_pair():
    """variants/cpu/README.md's table has a row for every spec there (attention-garbage had none)."""
    text = (R.ROOT / "variants/cpu/README.md").read_text()
    rows = set(re.findall(r"^\| `([\w-]+)` \|", text, re.M))
    assert rows == {p.stem for p in (R.ROOT / "variants/cpu").glob("*.toml")}


def test_the_commands_said_to_take_json_take_it():
    """'All commands but ... take `--json`': every other command and subcommand has the option,
    and none of those named has it (the README said all did; `log --json` was a usage error)."""
    import typer.main

    from bisectk.cli import app
    said = re.search(r"All commands but (.*?) take `--json`", R.README.read_text()).group(1)
    without = set(re.findall(r"`([\w ]+)`", said))

    def leaves(group, prefix=""):
        for name, cmd in group.commands.items():
            if hasattr(cmd, "commands"):
                yield from leaves(cmd, prefix + name + " ")
            else:
                yield prefix + name, cmd
    seen = dict(leaves(typer.main.get_command(app)))
    assert len(seen) >= 14 and "ledger check" in seen, sorted(seen)
    for name, cmd in seen.items():
        has = any("--json" in p.opts for p in cmd.params)
        named = name in without or name.split()[0] in without
        assert has != named, (name, has)


def test_ablate_jobs_help_says_what_the_readme_says():
    """`ablate --jobs` runs ahead of the search (issue 25); its help still said it only made the
    confirmation's and a flaky search's passes side by side."""
    import typer.main

    from bisectk.cli import app
    ablate = typer.main.get_command(app).commands["ablate"]
    (jobs,) = [p for p in ablate.params if "--jobs" in p.opts]
    assert "likely ask next" in jobs.help and "likely ask next" in R.README.read_text()
    assert "confirmation's, a flaky search's repeats" not in jobs.help


def test_ablate_gpus_help_says_runs_share_gpus_when_jobs_outnumber_them():
    """README: with more --jobs than --gpus runs share them (35517f9 corrected README); ablate's
    --help still said each run under way holds a GPU of its own, whatever the counts."""
    import typer.main

    from bisectk.cli import app
    ablate = typer.main.get_command(app).commands["ablate"]
    (gpus,) = [p for p in ablate.params if "--gpus" in p.opts]
    assert "each run under way holds its own" not in gpus.help
    assert "share" in gpus.help and "runs share them" in R.README.read_text()


def test_gpu_md_says_which_kernels_use_wgmma():
    """docs/gpu.md's PTX section said 'Neither kernel uses wgmma or setmaxnreg' after
    fmha_wgmma.py, which uses both, joined ws_pipeline.py and attention.py in
    tests/gpu/ptx_report.py: the paragraph names each CuTe DSL kernel and what it uses."""
    text = (DOCS / "gpu.md").read_text()
    start = text.index("## PTX evidence")
    section = text[start:text.index("\n## ", start + 1)]
    assert "Neither kernel uses wgmma" not in section
    for kernel in (R.ROOT / "kernels/cutedsl").glob("[!_]*.py"):
        assert f"`{kernel.name}`" in section, kernel.name


def test_the_readme_names_every_brace_a_spec_turns_into_one():
    """README, spec format: it said "`{{` is a literal brace; other braces are left alone", but
    `}}` reaches the subject as `}` too (str.format's rule): inline code closing two braces at once
    (`-c "d = {'a': {'b': 1}}"`) lost one and died of a SyntaxError the README said could not come."""
    from bisectk.spec import substitute
    text = " ".join(R.README.read_text().split())
    said = re.search(r"`\{\{` [^;]*literal brace.*?other braces are left alone", text).group(0)
    for typed in ("{{", "}}"):
        assert (f"`{typed}`" in said) == (substitute(f"a{typed}b", {}) != f"a{typed}b"), (typed, said)
    example = re.search(r"`-c \"(.*?)\"`", said).group(1)
    assert substitute(example, {}) == "d = {'a': {'b': 1}}", example


def test_what_the_readme_says_of_json_with_stderr_merged_holds(tmp_path):
    """README: "With `--json`, progress is shown only on a terminal, so `--json 2>&1` stays one
    JSON document." A spec warning (`bisectk: warning: factor 'seed' is used by no placeholder`)
    is said on stderr all the same, and `ablate --json 2>&1 | jq` read a line that is no JSON."""
    import json
    import subprocess
    import sys

    from tests.conftest import err_spec
    spec = err_spec(tmp_path, "w", "import json, sys\nprint('BISECTK_RESULT ' + json.dumps({'err': float(sys.argv[1][-1])}))\n",
                    factors="a")
    spec.write_text(spec.read_text().replace("[good]\n", "[good]\nseed = 0\n").replace("[bad]\n", "[bad]\nseed = 1\n"))
    p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", spec, "--json", "--ledger", tmp_path / "l.db"],
                       cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    text = " ".join(R.README.read_text().split())
    try:
        json.loads(p.stdout)
    except ValueError:
        assert "`--json 2>&1` stays one JSON document" not in text, p.stdout[:300]
        assert "bisectk: warning:" in p.stdout
        said = re.search(r"With `--json`, progress is shown only on a terminal[^.]*\.", text).group(0)
        assert "warning" in said, said
