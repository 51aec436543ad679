"""The watchdog follows progress end to end (issue 13): on a JIT-shaped subject, the hang is called
soon after the point where the good run had finished and says where it stopped, while a
configuration that only compiles 3 s longer is never called a hang."""
import json
import re
import sys

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "bench"))
from hang_bench import spec  # noqa: E402


def test_hang_called_after_launch_and_slow_compile_is_not_a_hang(tmp_path):
    doc = json.loads(bisectk("ablate", spec(tmp_path, 0.5, quiet=False), "--json", "--ledger", tmp_path / "l.db",
                             timeout=600, check=0).stdout)
    assert doc["culprits"] == ["hang"]
    assert doc["endpoints"]["timeout"]["source"] == "progress"
    bad = doc["endpoints"]["bad"]["runs"][0]
    assert "hung after 'launch'" in bad["signature"]
    # the bad endpoint also compiles 3 s longer: measured at its own pace, the hang is called about a
    # second after the point where the good run had finished
    past = float(re.search(r"([\d.]+) s past the point", bad["signature"]).group(1))
    assert past <= 1.5
    slow = [a for a in doc["attempts"] if "slow_compile" in a["applied"] and "hang" not in a["applied"]]
    assert all(a["outcome"] == "pass" for a in slow)
    # a hybrid with only the slow compile: run it directly, it passes
    p = bisectk("run", tmp_path / "hang.toml", "--config", "good", "--set", "slow_compile=1", "--json",
                "--ledger", tmp_path / "l.db", timeout=300)
    assert p.returncode == 0, p.stdout[-1500:]
