# The one shape of a model study (tco, cloudcost): no benchmark, a cost model computed from the
# config. Three jobs and a target, named <study>_run, <study>_aggregate, <study>_figure, <study>:
#
#   <study>_run        python3 -m studies.<study>.model --config CFG --<key> OUT ...   (raw files)
#   <study>_aggregate  python3 -m studies.<study>.analyze --<key> IN ... --published P --<key> OUT ...
#   <study>_figure     python3 -m studies.<study>.<figure> --config CFG --series .. --break-even ..
#                      --published .. --out results/<study>/figures/<figure>.png
#
# Each `--<key>` is an entry of the study's OUT dict (underscores become dashes), in the order
# given, so the commands are those the studies wrote by hand before (same rule names, jobs and
# command lines; the figure's --config now comes first). The figure rule is the engine's
# analysis_rule. The run rule's command fits it too, but analysis_rule names its benchmark file
# after the script (<study>_model.tsv, not <study>_run.tsv); the aggregate takes no --config.
# Included by both studies' rules.smk (defining the function twice is harmless).


def model_study(
    study, out, *, run_outputs, aggregate_inputs, aggregate_outputs, figure, entry
):
    """Register the model study `study` (its report entry `entry`: title, paper, figure caption,
    tables) and define its rules. `out` maps keys to result paths; the *_outputs/_inputs name
    which keys each job writes or reads; `figure` is the one figure script's name."""

    def flags(kind, keys):
        return "".join(f" --{k.replace('_', '-')} {{{kind}.{k}}}" for k in keys)

    register_study(
        study,
        kick=[out["claims"]],
        **{
            "title": entry["title"],
            "paper": entry["paper"],
            "enabled": enabled(study),
            "claims": out["claims"],
            "measurements": out["measurements"],
            "figures": [{"path": out[figure], "caption": entry["figure_caption"]}],
            "tables": [{"path": out[k], "caption": c} for k, c in entry["tables"]],
            "stand_ins": [],
            "expected_times": {
                "setup_local": "none beyond ./repro setup",
                "run_local": "< 10 s",
                "analysis_local": "< 10 s",
                "run_cluster": "< 1 min (one small job)",
            },
            "benchmarks": [
                bench_log(study, f"{study}_run"),
                bench_log(study, f"{study}_aggregate"),
                bench_log(study, f"{study}_{figure}"),
            ],
        },
    )

    # the model: every cost month by month from the config (the study's raw file)
    analysis_rule(
        study, f"{study}_run", script="model", output={k: out[k] for k in run_outputs},
        args=flags("output", run_outputs).strip(), log=f"results/{study}/log/run.log", bench=f"{study}_run",
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
            f"results/{study}/log/aggregate.log",
        benchmark:
            bench_log(study, f"{study}_aggregate")
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        shell:
            f"python3 -m studies.{study}.analyze"
            + flags("input", [*aggregate_inputs, "published"])
            + flags("output", aggregate_outputs)
            + " > {log} 2>&1"

    # the paper's figure (figures/<figure>.png), from the model's series
    analysis_rule(
        study, f"{study}_figure", script="{name}", names=[figure],
        inputs={"series": out["series"], "break_even": out["break_even"],
                "published": f"{STUDIES}/{study}/published.csv"},
        output={"figure": f"results/{study}/figures/{{name}}.png"},
        args="--series {input.series} --break-even {input.break_even} --published {input.published}"
        " --out {output.figure}",
    )

    rule:
        name:
            study
        input:
            out["claims"],
            out[figure],
