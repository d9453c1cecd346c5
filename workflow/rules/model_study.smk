# The engine's model-study shape (the cost models): no benchmark, a cost model computed from the
# config, declared in the study's declaration.py (repro.study.Study; its expected times and README row:
# repro.study.MODEL_STUDY_TIMES, MODEL_STUDY_README). A study's rules.smk calls model_study(...) once;
# this file is the Snakefile's (included after common.smk), never a study's. Three jobs, named <study>_run,
# <study>_aggregate, <study>_figure (the targets <study> and <study>_kick: the Snakefile's):
#
#   <study>_run        python3 -m studies.<study>.model --config CFG --<key> OUT ...   (raw files)
#   <study>_aggregate  python3 -m studies.<study>.analyze --config CFG --<key> IN ... --published P --<key> OUT ...
#   <study>_figure     python3 -m studies.<study>.<figure> --config CFG --series .. --break-even ..
#                      --published .. --out results/<study>/figures/<figure>.png
#
# Each `--<key>` is a key of the declaration's outputs (underscores become dashes), in the order
# given, so the commands are those the studies wrote by hand before (same rule names, jobs and
# command lines; the figure's --config now comes first). The run and figure rules are the engine's
# analysis_rule (the run's benchmark file keeps its name, <study>_run.tsv); the aggregate takes the
# whole section (study_json: the claims' tolerances and judging_scale, issue 28) before its files, so
# it is written here.


def model_study(st, *, run_outputs, aggregate_inputs, aggregate_outputs):
    """Register the model study declared by `st` (repro.study.Study: its title, paper, figure,
    tables, outputs and expected times; declaration.py) and define its rules. The *_outputs/_inputs
    name which of the declared outputs each job writes or reads; the one declared figure is the
    figure script's name."""
    study = st.name
    out = {k: st.out(k) for k in st.outputs}
    (figure,) = st.figures

    def flags(kind, keys):
        return "".join(f" --{k.replace('_', '-')} {{{kind}.{k}}}" for k in keys)

    register_study(
        st,
        kick=[out["claims"]],
        enabled=enabled(study),
        stand_ins=[],
        benchmarks=[
            bench_log(study, f"{study}_run"),
            bench_log(study, f"{study}_aggregate"),
            bench_log(study, f"{study}_{figure}"),
        ],
    )

    # the model: every cost month by month from the config (the study's raw file); it is the
    # study's run, so it gets run_json (the section without x-judging/x-plan keys; none is marked)
    analysis_rule(
        study, f"{study}_run", script="model", output={k: out[k] for k in run_outputs},
        args=flags("output", run_outputs).strip(), log=f"{st.results}/log/run.log", bench=f"{study}_run",
        cfg=lambda wc: run_json(study),
    )

    rule:
        """The tidy table, the paper's tables and the claims, from the model's raw file only."""
        name:
            f"{study}_aggregate"
        input:
            analysis_image_input(),
            # one mapping, in this order: code, the inputs, published (the jobs' input order)
            **{
                "code": study_code(study, "analyze"),
                **{k: out[k] for k in aggregate_inputs},
                "published": f"{STUDIES}/{study}/published.csv",
            },
        output:
            **{k: out[k] for k in aggregate_outputs},
        log:
            f"{st.results}/log/aggregate.log",
        benchmark:
            bench_log(study, f"{study}_aggregate")
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        params:
            # the whole section with judging_scale (study_json): its claims' tolerances per scale
            cfg=lambda wc: study_json(study),
        shell:
            f"python3 -m studies.{study}.analyze --config {{params.cfg}}"
            + flags("input", [*aggregate_inputs, "published"])
            + flags("output", aggregate_outputs)
            + " > {log} 2>&1"

    # the paper's figure (figures/<figure>.png), from the model's series
    analysis_rule(
        study, f"{study}_figure", script="{name}", names=[figure],
        inputs={"series": out["series"], "break_even": out["break_even"],
                "published": f"{STUDIES}/{study}/published.csv"},
        output={"figure": st.figure("{name}")},
        args="--series {input.series} --break-even {input.break_even} --published {input.published}"
        " --out {output.figure}",
    )

    # the whole study (rule <study>: claims, tidy table, figure, tables) and <study>_kick (its
    # claims) are the Snakefile's, derived from the declaration and the kick above
