"""tools/cosbench/real.py, the runner of the real COSBench 0.4.2 on a cluster. COSBench cannot be
obtained on this machine, so these tests drive the runner against a *scripted* COSBench folder
(start-all.sh / cli.sh / stop-all.sh written here that answer as COSBench's do: "Accepted with ID",
archive/run-history.csv, archive/<wid>-<name>/): they check the runner's own logic -- submit-ID
parsing, waiting on run-history's State, collecting the CSVs into cosbench-driver's layout, failing
on a failed or never-ending workload, stopping COSBench every time. They say nothing about
COSBench itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.cosbench import parser as cosparse
from tools.cosbench import real

HERE = Path(__file__).resolve().parents[1]
COLUMNS = json.loads((HERE / "fixtures" / "csv" / "cosbench-0.4.2-columns.json").read_text())["workload_csv"]

CLI = r"""#!/bin/bash
# scripted COSBench cli.sh: submit records the workload in archive/ with the state in $HOME_STATE
set -e
cd "$(dirname "$0")"
case "$1" in
  submit)
    name=$(sed -n 's/.*<workload name="\([^"]*\)".*/\1/p' "$2" | head -1)
    mkdir -p archive/w7-$name
    cp "$2" archive/w7-$name/workload-config.xml
    cat header.csv > archive/w7-$name/w7-$name.csv
    echo "s1-main,read,read,100,409600,2.5,1.1,2,3,4,5,6,7,50.5,206848,100%,completed" >> archive/w7-$name/w7-$name.csv
    echo "Stage,x" > archive/w7-$name/s1-main.csv
    echo "Id,Name,Submitted-At,Started-At,Stopped-At,Op-Info,State,Detailed State" > archive/run-history.csv
    echo "w7,$name,a,b,c,read,$(cat state),x" >> archive/run-history.csv
    echo "Accepted with ID: w7"
    ;;
  cancel) echo cancelled >> calls ;;
esac
"""


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "cosbench"
    (h / "log").mkdir(parents=True)
    (h / "cli.sh").write_text(CLI)
    (h / "start-all.sh").write_text("cd \"$(dirname \"$0\")\"; echo start >> calls\n")
    (h / "stop-all.sh").write_text("cd \"$(dirname \"$0\")\"; echo stop >> calls\n")
    (h / "header.csv").write_text(",".join(COLUMNS) + "\n")
    (h / "log" / "system.log").write_text("controller said something\n")
    (h / "state").write_text("finished")
    xml = tmp_path / "p002-4KB-w2.xml"
    xml.write_text('<?xml version="1.0"?>\n<workload name="p002-4KB-w2" description="x"></workload>\n')
    return h, xml


def test_a_finished_workload_lands_in_the_driver_layout(home, tmp_path):
    h, xml = home
    out = tmp_path / "out"
    csv = real.run(xml, out, h, timeout=10)
    assert csv == out / "w7-p002-4KB-w2.csv"
    assert cosparse.find_workload_csv(out) == csv  # the study's parser finds it as it finds the driver's
    rows = cosparse.workload_rows(csv)
    assert rows[0]["Throughput"] == 50.5 and rows[0]["Succ-Ratio"] == 1.0 and rows[0]["stage"] == "s1-main"
    assert (out / "workload-config.xml").read_text() == xml.read_text() and (out / "s1-main.csv").exists()
    assert (h / "calls").read_text().split() == ["start", "stop"]


@pytest.mark.parametrize("state", ["failed", "cancelled"])
def test_a_workload_that_did_not_finish_fails_with_the_log_and_cosbench_is_stopped(home, tmp_path, state):
    h, xml = home
    (h / "state").write_text(state)
    with pytest.raises(real.CosbenchError, match=f"ended {state}") as e:
        real.run(xml, tmp_path / "out", h, timeout=10)
    assert "controller said something" in str(e.value)
    assert (h / "calls").read_text().split() == ["start", "stop"]


def test_a_workload_that_never_ends_is_cancelled_at_the_timeout(home, tmp_path):
    h, xml = home
    (h / "state").write_text("processing")
    with pytest.raises(real.CosbenchError, match="did not end within"):
        real.run(xml, tmp_path / "out", h, timeout=0.5)
    assert (h / "calls").read_text().split() == ["start", "cancelled", "stop"]


def test_a_refused_submission_names_the_file(home, tmp_path):
    h, xml = home
    (h / "cli.sh").write_text("#!/bin/bash\necho 'Error: workload is invalid' >&2; exit 1\n")
    with pytest.raises(real.CosbenchError, match="cli.sh submit p002-4KB-w2.xml: exit 1"):
        real.run(xml, tmp_path / "out", h, timeout=5)


def test_not_a_cosbench_folder(tmp_path):
    with pytest.raises(real.CosbenchError, match="cli.sh missing"):
        real.run(tmp_path / "x.xml", tmp_path / "out", tmp_path, timeout=1)


def test_a_read_only_cosbench_folder_runs_from_a_copy(home, tmp_path):
    """workdir: COSBench's folder is copied (the image's /opt/cosbench is read-only), the copy is
    removed afterwards and the original is never written."""
    h, xml = home
    before = sorted(p.name for p in h.iterdir())
    csv = real.run(xml, tmp_path / "out", h, timeout=10, workdir=tmp_path / "work")
    assert csv.exists() and sorted(p.name for p in h.iterdir()) == before
    assert not (tmp_path / "work" / "cosbench").exists()
