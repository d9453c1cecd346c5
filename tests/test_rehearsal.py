"""repro.rehearsal's checks, fed what Slurm and the raw records would say: true when the sides ran
apart on the nodes the job asked for, false (with the evidence) on each contradiction."""

from __future__ import annotations

import json
from pathlib import Path

from repro import rehearsal as rh

NAMES = {f"node{i}" for i in range(4)}
JOB = ("JobId=19 JobName=abc UserId=root(0) JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=node[0-3] "
       "NumNodes=4 NumCPUs=8 NumTasks=4 OverSubscribe=NO WorkDir=/var/tmp/w/repro "
       "Comment=rule_smoke_run_wildcards_3 TresPerNode=")


def job(**kw) -> dict:
    line = JOB
    for k, v in kw.items():
        line = line.replace(f"{k}=", f"{k}=OLD", 1)
        line = " ".join(f"{k}={v}" if t.startswith(f"{k}=OLD") else t for t in line.split())
    return rh.parse_job_line(line)


def smoke_rec(nodes, **extra) -> dict:
    ranks = [{"rank": i, "node": n, "host": n, "slurm_job_id": "19"} for i, n in enumerate(nodes)]
    return {"status": "ok", "host": nodes[0], "extra": {"ranks": ranks, **extra}}


def test_parse_job_line_and_nodelist():
    j = rh.parse_job_line(JOB)
    assert j["rule"] == "smoke_run" and j["wildcards"] == "3" and j["nodes_asked"] == 4 and j["exclusive"]
    assert rh.expand_nodelist("node[0-2,5]") == ["node0", "node1", "node2", "node5"]
    assert rh.expand_nodelist("node1,node3") == ["node1", "node3"]


def test_apart_and_asked_true_when_every_node_of_the_job_ran_a_side():
    r = rh.judge_job(job(), [("results/smoke/raw/nodes~3/rep~0.json", smoke_rec(sorted(NAMES)))], NAMES)
    assert all(c["ok"] for c in r["checks"].values()), r["checks"]
    assert r["measured_nodes"] == sorted(NAMES)


def test_everything_on_the_driver_node_fails_apart_and_asked():
    """The issue's defect: a 4-node job whose sides all ran on one host."""
    r = rh.judge_job(job(), [("results/storage/raw/x~1/rep~0.json", smoke_rec(["node0"] * 4))], NAMES)
    assert r["checks"]["apart"]["ok"] is False and "never used" in r["checks"]["apart"]["evidence"]
    assert r["checks"]["asked_what_used"]["ok"] is False
    assert "asked 4 node(s), used 1" in r["checks"]["asked_what_used"]["evidence"][0]


def test_a_node_outside_the_allocation_fails():
    r = rh.judge_job(job(NodeList="node[0-1]", NumNodes="2"),
                     [("results/smoke/raw/nodes~1/rep~0.json", smoke_rec(["node0", "node3"]))], NAMES)
    assert r["checks"]["apart"]["ok"] is False and "outside" in r["checks"]["apart"]["evidence"]


def test_loopback_service_in_a_multi_node_job_fails():
    rec = smoke_rec(sorted(NAMES), server={"url": "http://127.0.0.1:8080/", "bind": "10.79.0.11"})
    r = rh.judge_job(job(), [("results/inference/raw/a~1/rep~0.json", rec)], NAMES)
    assert r["checks"]["no_loopback"]["ok"] is False
    assert "extra.server.url=http://127.0.0.1:8080/" in r["checks"]["no_loopback"]["evidence"][0]
    rec = smoke_rec(sorted(NAMES), server={"url": "http://10.79.0.11:8080/"})
    assert rh.judge_job(job(), [("results/inference/raw/a~1/rep~0.json", rec)], NAMES)["checks"]["no_loopback"]["ok"]


def test_not_exclusive_too_few_tasks_and_missing_gpu_fail():
    recs = [("results/smoke/raw/nodes~3/rep~0.json", smoke_rec(sorted(NAMES)))]
    c = rh.judge_job(job(OverSubscribe="OK"), recs, NAMES)["checks"]["asked_what_used"]
    assert c["ok"] is False and "--exclusive" in c["evidence"][0]
    c = rh.judge_job(job(NumTasks="2"), recs, NAMES)["checks"]["asked_what_used"]
    assert c["ok"] is False and "4 ranks but 2 tasks" in c["evidence"][0]
    c = rh.judge_job(job(), recs, NAMES, gres_wanted="gpu:1")["checks"]["asked_what_used"]
    assert c["ok"] is False and "gpu:1" in c["evidence"][0]
    gpu_job = job(TresPerNode="gres:gpu:1")
    assert rh.judge_job(gpu_job, recs, NAMES, gres_wanted="gpu:1")["checks"]["asked_what_used"]["ok"]


def test_ranks_as_a_count():
    rec = {"status": "ok", "extra": {"ranks": 4, "agents": [{"node": n} for n in sorted(NAMES)]}}  # a count
    assert rh.judge_job(job(), [("results/memfs/raw/x~3/rep~0.json", rec)], NAMES)["checks"]["asked_what_used"]["ok"]
    rec["extra"]["ranks"] = 6
    c = rh.judge_job(job(), [("results/memfs/raw/x~3/rep~0.json", rec)], NAMES)["checks"]["asked_what_used"]
    assert c["ok"] is False and "6 ranks but 4 tasks" in c["evidence"][0]


def test_placement_under_list_keys():
    rec = {"status": "ok", "host": "node0", "extra": {"cluster": {"slurm_nodes": ["node1", "node2", "node3"],
                                                                  "driver_host": "node0", "nodes": 3}}}
    m = rh.measured_placement(rec, NAMES)
    assert m["nodes"] == sorted(NAMES) and m["where"]["node2"] == ["extra.cluster.slurm_nodes[1]"]


def test_a_planned_allocation_is_not_taken_for_measured_placement():
    """A record that stores the plan (repro.allocation's as_dict(): every node of the job) but
    measured only its driver: the check sees one node, so `apart` fails, as it must."""
    plan = {"driver": "node0", "system_nodes": ["node1", "node2", "node3"],
            "nodes": [{"name": n, "hostname": n} for n in sorted(NAMES)]}
    rec = {"status": "ok", "metrics": [], "extra": {"allocation": plan, "placement": {"planned": plan},
                                                    "plan": {"servers": {"node1": "10.79.0.11"}},
                                                    "driver": {"node": "node0"}}}
    assert rh.measured_placement(rec, NAMES)["nodes"] == ["node0"]
    r = rh.judge_job(job(), [("results/smoke/raw/nodes~3/rep~0.json", rec)], NAMES)
    assert r["checks"]["apart"]["ok"] is False
    rec["extra"]["daemons"] = [{"node": n} for n in ("node1", "node2", "node3")]  # measured: apart
    assert rh.judge_job(job(), [("results/smoke/raw/nodes~3/rep~0.json", rec)], NAMES)["checks"]["apart"]["ok"]


def test_unmeasured_placement_is_not_taken_for_true():
    r = rh.judge_job(job(), [("results/smoke/raw/nodes~3/rep~0.json", {"status": "ok", "metrics": []})], NAMES)
    assert r["checks"]["apart"]["ok"] is False and "placement not measured" in r["checks"]["apart"]["evidence"]


def _study(ws: Path, recs: dict, claims: str | None):
    for rel, rec in recs.items():
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rec))
    if claims is not None:
        (ws / "results/smoke/claims.csv").write_text(claims)


def test_study_checks_raw_complete_and_claims(tmp_path):
    ok_claims = "claim_id,verdict,note\nc1,reproduced,\nc2,not run,no GPU here\n"
    _study(tmp_path, {"results/smoke/raw/nodes~3/rep~0.json": smoke_rec(sorted(NAMES))}, ok_claims)
    aux = tmp_path / "results/smoke/raw/nodes~3/rep~0.out/summary.json"  # a tool's output, not a record
    aux.parent.mkdir(parents=True)
    aux.write_text('{"schema": "repro.cosbench/1", "ops": 3}')
    jobs = [job()]
    r = rh.judge_study(tmp_path, "smoke", jobs, NAMES, dry_run_clean=True)
    assert all(c["ok"] for c in r["checks"].values()), r["checks"]
    assert r["records"] == 1
    # snakemake -n still has work: not complete
    assert rh.judge_study(tmp_path, "smoke", jobs, NAMES, dry_run_clean=False)["checks"]["raw_complete"]["ok"] is False
    # a failure record left behind, a failed Slurm job
    _study(tmp_path, {"results/smoke/failed/nodes~1/rep~0.json": {"status": "failed", "failure": "x"}}, None)
    r = rh.judge_study(tmp_path, "smoke", jobs + [job(JobId="20", JobState="NODE_FAIL", NodeList="node[0-1]",
                                                      NumNodes="2", Comment="rule_smoke_run_wildcards_1")],
                       NAMES, dry_run_clean=True)
    assert r["checks"]["raw_complete"]["ok"] is False
    assert any("NODE_FAIL" in e for e in r["checks"]["raw_complete"]["evidence"])
    # resumed: the same rule and wildcards completed by a later job -- the failure no longer counts
    (tmp_path / "results/smoke/failed/nodes~1/rep~0.json").unlink()
    r = rh.judge_study(tmp_path, "smoke", jobs + [
        job(JobId="20", JobState="NODE_FAIL", NodeList="node[0-1]", NumNodes="2", Comment="rule_smoke_run_wildcards_1"),
        job(JobId="21", NodeList="node[0-1]", NumNodes="2", Comment="rule_smoke_run_wildcards_1")],
        NAMES, dry_run_clean=True)
    assert r["checks"]["raw_complete"]["ok"] is True, r["checks"]["raw_complete"]
    # claims: a missing verdict, a 'not run' that does not say why
    (tmp_path / "results/smoke/claims.csv").write_text("claim_id,verdict,note,reproduced\nc1,,,\nc2,not run,,not run\n"
                                                        "c3,not run,,not run (fewer than two user counts)\n")
    c = rh.claims_check(tmp_path, "smoke")
    assert c["ok"] is False and len(c["evidence"]) == 2 and "c3" not in str(c["evidence"])


def test_records_are_matched_to_their_job_by_wildcards():
    jobs = [job(JobId="30", Comment="rule_mpifuse_run_wildcards_home_3_1KB_0"),
            job(JobId="31", Comment="rule_mpifuse_run_wildcards_home_1_1KB_0")]
    m = rh.match_job("results/mpifuse/raw/source~home/nodes~1/size~1KB/rep~0/osr.json", {}, jobs, NAMES)
    assert m["job_id"] == "31"
    assert rh.match_job("results/mpifuse/raw/source~scratch/nodes~1/size~1KB/rep~0/osr.json", {}, jobs, NAMES) is None
    # the same wildcards run twice (failed, then resumed) on different nodes: the job whose nodes it names
    again = [job(JobId="40", NodeList="node[0-1]", Comment="rule_smoke_run_wildcards_1"),
             job(JobId="41", NodeList="node[2-3]", Comment="rule_smoke_run_wildcards_1")]
    rec = {"status": "ok", "extra": {"ranks": [{"node": "node0"}, {"node": "node1"}]}}
    assert rh.match_job("results/smoke/raw/nodes~1/rep~0.json", rec, again, NAMES)["job_id"] == "40"
    rec = {"status": "ok", "extra": {"ranks": [{"node": "node2"}, {"node": "node3"}]}}
    assert rh.match_job("results/smoke/raw/nodes~1/rep~0.json", rec, again, NAMES)["job_id"] == "41"
    # a study with one raw file and no wildcards (tco's raw/model.json): its run job, newest first
    models = [job(JobId="70", Comment="rule_tco_run"), job(JobId="71", Comment="rule_tco_run"),
              job(JobId="72", Comment="rule_tco_aggregate")]
    assert rh.match_job("results/tco/raw/model.json", {}, models, NAMES)["job_id"] == "71"
    assert rh.match_job("results/cloudcost/raw/model.json", {}, models, NAMES) is None
    # two rules with the same wildcard values: the one the path names
    two = [job(JobId="50", Comment="rule_inference_ceiling_wildcards_0"),
           job(JobId="51", Comment="rule_inference_raw_rate_wildcards_0")]
    assert rh.match_job("results/inference/raw/experiment~ceiling/users~4/rep~0.json", {}, two, NAMES)["job_id"] == "50"
    # the rule the path names, then the most specific wildcards
    memfs = [job(JobId="60", Comment="rule_memfs_limit_run_wildcards_IPoIB_1_0"),
             job(JobId="61", Comment="rule_memfs_envelope_run_wildcards_IPoIB_locality_1_1MiB_0"),
             job(JobId="62", Comment="rule_memfs_metadata_run_wildcards_IPoIB_memfs_1_0")]
    path = "results/memfs/raw/envelope/network~IPoIB/design~locality/nodes~1/size~1MiB/rep~0.json"
    assert rh.match_job(path, {}, memfs, NAMES)["job_id"] == "61"
    path = "results/memfs/raw/metadata/network~IPoIB/design~memfs/nodes~1/rep~0.json"
    assert rh.match_job(path, {}, memfs, NAMES)["job_id"] == "62"
    assert rh.match_job("results/memfs/raw/limit/network~IPoIB/nodes~1/rep~0.json", {}, memfs, NAMES)["job_id"] == "60"
    # a path with more parts than the rule's wildcards (one file per variant of one job)
    m = rh.match_job("results/mpifuse/failed/source~home/variant~osr/nodes~3/size~1KB/rep~0.json", {}, jobs, NAMES)
    assert m["job_id"] == "30"
    assert rh.match_job("results/mpifuse/failed/source~home/variant~osr/nodes~2/size~1KB/rep~0.json", {}, jobs,
                        NAMES) is None


def test_failed_images_are_named_from_the_image_step_log():
    log = ("Building DAG of jobs...\nError in rule storage_layer_image:\n    message: None\n    jobid: 2\n"
           "    input: containers/mdtest.def, containers/sif/ceph.sif\n    output: containers/sif/ceph-mdtest.sif\n"
           "    log: results/containers/log/ceph-mdtest.log\nError in rule build_container:\n"
           "    output: containers/sif/triton.sif\nFinished jobid: 3 (Rule: build_container)\n")
    assert rh.failed_images(log) == ["ceph-mdtest.sif", "triton.sif"]
    assert rh.failed_images("Finished jobid: 1 (Rule: build_container)\n") == []


def test_an_image_that_cannot_be_built_falls_back_for_its_side_only():
    """Issue 27: an unbuildable image no longer sends a whole study to the host's builds. A stack
    image's benchmark layer falls back as the study declares (storage: COSBench's driver, mdtest in the
    stack's mdbench layer: Open MPI beside the mount, from the package registries); any other image
    (Triton) runs its side from the host's build, the rest stay images."""
    host, overlay, sides = rh.image_fallbacks("storage", {"ceph-cosbench": "github.com unreachable",
                                                          "juicefs-mdtest": "github.com unreachable"})
    assert host == [] and overlay == {"storage": {"cosbench": {"tool": "driver"},
                                                  "mdtest": {"container": "mdbench", "tool": "mdbench"}}}
    assert "github.com unreachable" in sides["ceph-cosbench"] and "fallback" in sides["juicefs-mdtest"]
    host, overlay, sides = rh.image_fallbacks("inference", {"triton": "nvcr.io unreachable"})
    assert host == ["triton"] and overlay == {} and sides["triton"].startswith("host build (nvcr.io")


def test_prepare_images_names_unbuildable_images_before_any_build(tmp_path, monkeypatch):
    """The plan's images are checked first: the unbuildable ones never reach the build step, whose
    overlay (containers.host_build, the study's fallback) is in place when it runs; a build that then
    fails falls back the same way; every image of the plan gets a line saying how its side ran."""
    import yaml

    (tmp_path / "config").mkdir()
    (tmp_path / "containers").mkdir()
    for n in ("torchserve", "triton", "locust", "inference-tf"):
        (tmp_path / "containers" / f"{n}.def").write_text(f"# {n}\n")
    monkeypatch.setattr(rh, "planned_images", lambda ws, target, timeout=600: ["inference-tf", "locust", "torchserve",
                                                                                "triton"])
    probe_says = {"triton": "nvcr.io unreachable: name lookup failed"}
    from repro import images
    monkeypatch.setattr(images, "why_not", lambda d, probe_fn=None: probe_says.get(Path(d).stem, ""))
    seen = {}

    def build(ws, target, timeout):
        seen["overlay"] = yaml.safe_load((ws / rh.IMAGES_OVERLAY).read_text())
        seen["configfiles"] = rh.configfiles(ws)
        log = "Error in rule build_container:\n    output: containers/sif/inference-tf.sif\n"
        return __import__("subprocess").CompletedProcess([], 1, log, "")

    monkeypatch.setattr(rh, "build_images", build)
    out = rh.prepare_images(tmp_path, "inference", "inference_kick", 60)
    assert seen["overlay"] == {"containers": {"host_build": ["triton"]}}  # before the build: triton never built
    assert rh.IMAGES_OVERLAY in seen["configfiles"]
    assert out["unbuildable"] == {"triton": "nvcr.io unreachable: name lookup failed"}
    assert out["failed"] == {"inference-tf": "its build failed (the image step's log)"}
    assert out["sides"]["torchserve"] == "image" and out["sides"]["locust"] == "image"
    assert out["sides"]["triton"].startswith("host build (nvcr.io") and "build failed" in out["sides"]["inference-tf"]
    assert yaml.safe_load((tmp_path / rh.IMAGES_OVERLAY).read_text()) == {
        "containers": {"host_build": ["inference-tf", "triton"]}}
    assert out["step_failed_unnamed"] is False


def test_failed_jobs_are_told_apart_with_their_evidence():
    """A lost node, a timeout under load and a crash are three different kinds, each with its evidence;
    a job a resumed run completed later still shows, with the job that completed it."""
    done = {("smoke_run", "1"): 25}
    lost = rh.job_failure(job(JobId="20", JobState="NODE_FAIL", ExitCode="0:0", NodeList="node[0-1]",
                              Comment="rule_smoke_run_wildcards_1"), [], done)
    assert lost["kind"] == "lost_node" and lost["completed_later_by"] == "25"
    assert "NODE_FAIL" in lost["evidence"][0] and "no failure record" in lost["evidence"][1]
    rec = {"status": "failed", "failure": "mcbench on node1 timed out after 60 s",
           "failure_load": {"loadavg_1m": 9.0, "ncpu": 2}}
    over = rh.job_failure(job(JobId="22", JobState="FAILED", ExitCode="1:0"), [("results/x/failed/a.json", rec)], {})
    assert over["kind"] == "overload" and "timed out" in over["evidence"][1] and over["completed_later_by"] == ""
    rec = {"status": "failed", "failure": "rank 2 on node2: Caught signal 11 (Segmentation fault)",
           "failure_kind": "crash"}
    crash = rh.job_failure(job(JobId="23", JobState="FAILED", ExitCode="1:0"), [("results/x/failed/b.json", rec)], {})
    assert crash["kind"] == "crash" and "[crash]" in crash["evidence"][1]
    assert rh.job_failure(job(JobId="24", JobState="TIMEOUT", ExitCode="0:15"), [], {})["kind"] == "timeout"
    assert len({lost["kind"], over["kind"], crash["kind"]}) == 3


def test_the_image_plan_lists_the_layers_snakemake_leaves_as_remaining():
    """Snakemake 9's forced dry run of the image step stops before the layer images (their base is
    forced too) and lists them as remaining jobs: they are images of the plan all the same (the first
    full rehearsal with images ran storage from host builds because this output was read as a failure)."""
    out = ("localrule build_container:\n    output: containers/sif/ceph.sif\n    wildcards: name=ceph\n"
           "localrule build_container:\n    output: containers/sif/juicefs.sif\n"
           "BUG: Out of jobs ready to be started, but not all files built yet.\nRemaining jobs:\n"
           " - storage_layer_image: containers/sif/juicefs-cosbench.sif\n"
           " - storage_layer_image: containers/sif/ceph-mdtest.sif\n")
    assert rh.image_names_in_plan(out) == ["ceph", "ceph-mdtest", "juicefs", "juicefs-cosbench"]
    assert rh.image_names_in_plan("Nothing to be done.\n") == []


def test_the_studies_and_their_facts_come_from_the_registry_and_the_declarations(tmp_path, monkeypatch):
    """Issue 29: the rehearsal names no study. Its list is the registry's (the study folders), what cannot
    run here is each declaration's not_rehearsed, the no-containers overlay each declaration's
    no_containers; a study without a declaration (a fake one here) has neither."""
    from repro import config as rc
    from repro import study as rstudy

    assert rh.studies() == rc.study_names() and len(rh.studies()) >= 9
    assert "GPU" in rh.not_rehearsed("inference") and "Kubernetes" in rh.not_rehearsed("serverless")
    assert rh.not_rehearsed("smoke") == "" and rh.declaration("smoke").name == "smoke"  # nothing it cannot run
    assert rh.judge_study(tmp_path, "inference", [], NAMES, dry_run_clean=None)["not_rehearsed"] == \
        rh.not_rehearsed("inference")
    fake = {"a": rstudy.Study(name="a", title="A", paper="-", no_containers={"tool": {"kind": "driver"}},
                              not_rehearsed="its GPU"),
            "b": rstudy.Study(name="b", title="B", paper="-")}
    monkeypatch.setattr(rh, "studies", lambda: ["a", "b", "c"])
    monkeypatch.setattr(rh, "declaration", fake.get)
    assert rh.no_containers() == {"containers": {"use_for_benchmarks": False}, "a": {"tool": {"kind": "driver"}}}
    assert [rh.not_rehearsed(s) for s in ("a", "b", "c")] == ["its GPU", "", ""]
    (tmp_path / "config").mkdir()
    rh._no_containers_overlay(tmp_path, True)
    import yaml

    assert yaml.safe_load((tmp_path / rh.NOCONTAINERS_OVERLAY).read_text()) == rh.no_containers()


def test_the_gpus_wanted_are_any_studys_slurm_gres(tmp_path):
    """The GPUs a job should get come from the study's own section (<study>.slurm.gres at the rehearsal's
    scale), for any study that has one; a study without it asks for none."""
    import shutil

    import yaml
    from repro.testing import REPO

    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config" / "config.yaml", tmp_path / "config" / "config.yaml")
    over = yaml.safe_load((REPO / "config" / "rehearsal.yaml").read_text())
    over.setdefault("inference", {}).setdefault("slurm", {})["gres"] = "gpu:2"
    (tmp_path / "config" / "rehearsal.yaml").write_text(yaml.safe_dump(over))
    assert rh._gres_wanted(tmp_path, "inference") == "gpu:2"
    assert rh._gres_wanted(tmp_path, "mpifuse") == "" and rh._gres_wanted(tmp_path, "smoke") == ""


def test_the_image_rules_are_the_rules_of_the_plans_image_jobs():
    """The image step builds with the rules of the plan's image jobs (a study's layer rule too, also when
    Snakemake leaves it remaining), never a rule list naming a study; build_container at least."""
    plan = ("rule build_container:\n    input: containers/ceph.def\n    output: containers/sif/ceph.sif\n"
            "    wildcards: name=ceph\n"
            "rule xyz_run:\n    input: containers/sif/ceph.sif\n    output: results/xyz/raw/a.json\n"
            "localrule xyz_layer:\n    output: containers/sif/ceph-tool.sif, containers/sif/ceph-tool.txt\n"
            "Remaining jobs:\n - other_layer: containers/sif/juicefs-tool.sif\n")
    assert rh.image_rules_in_plan(plan) == ["build_container", "other_layer", "xyz_layer"]
    assert rh.image_names_in_plan(plan) == ["ceph", "ceph-tool", "juicefs-tool"]
    assert rh.image_rules_in_plan("rule a_run:\n    output: results/a.sif.json\n") == []
