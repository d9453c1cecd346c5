"""A study's declaration: one Python object, importable without Snakemake.

Each study folder has ``declaration.py`` with ``STUDY = Study(...)``: its title, paper, the figures and
tables with their captions, the aggregate's outputs, the images its jobs run in and its expected
times. Every ``results/<study>/...`` path of those outputs is derived here, once; the rules
(``analysis_rule``), the whole-study target, the report's entry (``register_study(STUDY, ...)``)
and the README's expected-times table (``python3 -m repro.study --readme``) read them from it.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

STUDIES_DIR = Path(__file__).resolve().parents[2] / "studies"
TIME_KEYS = ("setup_local", "run_local", "analysis_local", "run_cluster")
# the aggregate of a benchmark study with a limits table: the tidy table, its summary, the limits, the claims
AGGREGATE_OUTPUTS = {"measurements": "measurements.csv", "summary": "tables/summary.csv",
                     "limits": "tables/limits.csv", "claims": "claims.csv"}
# the engine's model-study shape (workflow/rules/model_study.smk: a model computed from the config, no
# benchmark, any machine): the expected times and README row every such study declares
MODEL_STUDY_README = {"local": "< 10 s", "cluster": "< 1 min"}
MODEL_STUDY_TIMES = {
    "setup_local": "none beyond ./repro setup",
    "run_local": "< 10 s",
    "analysis_local": "< 10 s",
    "run_cluster": "< 1 min (one small job)",
}


_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Experiment:
    """One experiment of a study: ``run.py``'s ``@RUN.experiment(name)`` and the one rule that runs it
    (workflow/rules/experiment.smk, ``experiment_rule``). Its raw path is spelled here once, the
    fields in braces: ``raw="source~{source}/variant~{variant}/nodes~{nodes}/rep~{rep}.json"`` under
    ``results/<study>/raw/``. Every field is a wildcard of the rule, except those in ``each``: one job
    writes a raw file for each of their values (mpifuse: every use case of one run). The engine
    derives the rule's output, log, benchmark, wildcard constraints, ``--params`` (the job's fields
    but ``rep``) and the expected list from it."""

    name: str
    raw: str
    each: tuple[str, ...] = ()              # fields one job spans (a raw file for each value)
    constraints: dict[str, str] = field(default_factory=dict)  # field -> regex (default [^/]+; rep [0-9]+)
    rule: str = ""                          # the rule's name (default <study>_<name>)
    module: str = "run"                     # studies.<study>.<module> holds the experiment
    run: str = ""                           # its name there (default: name; two raw shapes of one experiment)

    def __post_init__(self):
        if "rep" not in self.fields:
            raise ValueError(f"experiment {self.name}: its raw path {self.raw!r} has no {{rep}}")
        bad = [f for f in (*self.each, *self.constraints) if f not in self.fields]
        if bad:
            raise ValueError(f"experiment {self.name}: {bad} are not fields of its raw path {self.raw!r}")

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(_FIELD.findall(self.raw))

    @property
    def job_fields(self) -> tuple[str, ...]:
        """The rule's wildcards: every field but ``each``, in path order (``rep`` among them)."""
        return tuple(f for f in self.fields if f not in self.each)

    def wildcard_path(self, sep: str = "/") -> str:
        """``f~{f}`` for each job field (``sep``-joined): one job's log and benchmark name."""
        return sep.join(f"{f}~{{{f}}}" for f in self.job_fields)

    def constraint(self, f: str) -> str:
        return self.constraints.get(f, r"[0-9]+" if f == "rep" else r"[^/]+")

    @property
    def entry(self) -> str:
        """The experiment's name in its module (``@RUN.experiment``)."""
        return self.run or self.name


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    paper: str
    figures: dict[str, str] = field(default_factory=dict)   # script -> caption: figures/<script>.png
    tables: dict[str, str] = field(default_factory=dict)    # script -> caption: tables/<script>.csv
    outputs: dict[str, str] = field(default_factory=dict)   # key -> path under results/<study>/
    output_tables: dict[str, str] = field(default_factory=dict)  # key of outputs -> caption (listed with the tables)
    images: tuple[str, ...] = ()                            # containers/<image>.def its jobs run in
    expected_times: dict[str, str] = field(default_factory=dict)  # TIME_KEYS
    readme: dict[str, str] = field(default_factory=dict)    # README rows: {"local": ..., "cluster": ...}
    # an image the site cannot build (repro.images) whose side needs more than the host's build of
    # the same system: the study-section overlay that runs that side without it, e.g. storage's
    # COSBench layer -> {"cosbench": {"tool": "driver"}}. Any other image falls back through
    # containers.host_build (its side from the host's build, every other side still in its image).
    image_fallbacks: dict[str, dict] = field(default_factory=dict)
    # the studies whose systems its jobs run: each provides them through the engine
    # (workflow/rules/uses.smk: provide_systems in its rules, used_systems in this study's), never
    # through its globals, so neither the other study's rules nor the include order matter
    uses: tuple[str, ...] = ()
    # the rehearsal (repro.rehearsal: the cluster path on this machine's multi-host cluster): what of
    # the study cannot run there, said in its results; and its section's overlay when the systems run
    # from the host's builds instead of their images (--no-containers), e.g. a tool that only an image has
    not_rehearsed: str = ""
    no_containers: dict = field(default_factory=dict)
    # its experiments (Experiment): each is one run.py experiment and one rule the engine derives
    experiments: tuple[Experiment, ...] = ()

    def __post_init__(self):
        bad = [k for k in self.output_tables if k not in self.outputs]
        if bad:
            raise ValueError(f"study {self.name}: output_tables names {bad}, not in outputs")
        unknown = [k for k in self.expected_times if k not in TIME_KEYS]
        if unknown:
            raise ValueError(f"study {self.name}: expected_times keys {unknown} (known: {TIME_KEYS})")
        if self.name in self.uses:
            raise ValueError(f"study {self.name}: uses itself")
        names = [e.name for e in self.experiments]
        if len(set(names)) != len(names):
            raise ValueError(f"study {self.name}: experiments named twice: {names}")

    @property
    def results(self) -> str:
        return f"results/{self.name}"

    def out(self, key: str) -> str:
        """An aggregate output's path: results/<study>/<outputs[key]>."""
        return f"{self.results}/{self.outputs[key]}"

    def experiment(self, name: str) -> Experiment:
        for e in self.experiments:
            if e.name == name:
                return e
        raise KeyError(f"study {self.name} declares no experiment {name!r} ({[e.name for e in self.experiments]})")

    def raw_path(self, experiment: str, **values) -> str:
        """One raw file: results/<study>/raw/<the experiment's raw path, its fields filled>. Values
        are formatted as in paths (repro.paramspace.fmt_value); a field left out stays a wildcard."""
        from repro.paramspace import fmt_value

        e = self.experiment(experiment)
        filled = {f: (fmt_value(values[f]) if f in values else f"{{{f}}}") for f in e.fields}
        return f"{self.results}/raw/{e.raw.format(**filled)}"

    def rule_name(self, experiment: str) -> str:
        return self.experiment(experiment).rule or f"{self.name}_{experiment}"

    def run_log(self, experiment: str, **values) -> str:
        """One job's log: results/<study>/log/<experiment>/<f~v/...>.log (job fields, rep last)."""
        e = self.experiment(experiment)
        return f"{self.results}/log/{experiment}/{e.wildcard_path()}.log".format(
            **{f: values.get(f, f"{{{f}}}") for f in e.job_fields})

    def run_benchmark(self, experiment: str, rule: str = "", **values) -> str:
        """One job's Snakemake benchmark file: results/<study>/benchmarks/<rule>/<f~v,...>.tsv."""
        e = self.experiment(experiment)
        return f"{self.results}/benchmarks/{rule or self.rule_name(experiment)}/{e.wildcard_path(',')}.tsv".format(
            **{f: values.get(f, f"{{{f}}}") for f in e.job_fields})

    def figure(self, name: str) -> str:
        return f"{self.results}/figures/{name}.png"

    def table(self, name: str) -> str:
        return f"{self.results}/tables/{name}.csv"

    def figure_entries(self) -> list[dict]:
        return [{"path": self.figure(n), "caption": c} for n, c in self.figures.items()]

    def table_entries(self) -> list[dict]:
        return ([{"path": self.table(n), "caption": c} for n, c in self.tables.items()]
                + [{"path": self.out(k), "caption": c} for k, c in self.output_tables.items()])

    def report_entry(self, **more) -> dict:
        """What the report reads (register_study): the declared outputs and ``more`` (enabled,
        stand_ins, benchmarks: what only the configuration knows)."""
        entry = {"title": self.title, "paper": self.paper}
        if "enabled" in more:
            entry["enabled"] = more.pop("enabled")
        if "claims" in self.outputs:
            entry["claims"] = self.out("claims")
        if "measurements" in self.outputs:
            entry["measurements"] = self.out("measurements")
        entry.update(figures=self.figure_entries(), tables=self.table_entries())
        if "stand_ins" in more:
            entry["stand_ins"] = more.pop("stand_ins")
        entry["expected_times"] = dict(self.expected_times)
        entry.update(more)
        return entry

    def all_outputs(self) -> list[str]:
        """The whole study's target: every declared output, figure and table."""
        seen = dict.fromkeys([self.out(k) for k in self.outputs]
                             + [self.figure(n) for n in self.figures]
                             + [e["path"] for e in self.table_entries()])
        return list(seen)


def declared(name: str) -> Study | None:
    """studies.<name>.declaration.STUDY, or None for a study that has no declaration.py yet."""
    if not (STUDIES_DIR / name / "declaration.py").exists():
        return None
    return importlib.import_module(f"studies.{name}.declaration").STUDY


def readme_rows(names: list[str]) -> list[str]:
    """The README's expected-times rows of the declared studies (`| study | local | cluster |`)."""
    rows = []
    for name in names:
        st = declared(name)
        if st is not None and st.readme:
            rows.append(f"| `{name}` | {st.readme['local']} | {st.readme['cluster']} |")
    return rows


if __name__ == "__main__":  # python3 -m repro.study --readme: the rows, to paste or to compare
    from repro import config as rc

    if sys.argv[1:] != ["--readme"]:
        sys.exit("usage: python3 -m repro.study --readme")
    print("\n".join(readme_rows(rc.study_names())))
