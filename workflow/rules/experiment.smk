# One benchmark experiment, one rule, derived from the study's declaration (repro.study.Experiment):
# the raw path is spelled once there; the rule's output, log, benchmark, wildcard constraints, the
# run contract's command line (--config, --params from the job's fields, --rep, --out {output}) and
# the expected list come from it here. workflow/README.md, "Adding a study".


def _typed(value):
    """A wildcard's value as the experiment's --params gets it: digits as an int, else the text."""
    return int(value) if value.isdigit() else value


STUDY_EXPECTED = {}  # (study, experiment) -> the raw files its configuration matrix expects


def experiment_rule(
    study,
    experiment,
    *,
    matrix,
    each=None,
    fixed=None,
    rulename=None,
    input=(),
    inputs=None,
    resources,
    ranks=None,
    exec="",
    wrap=None,
    params=None,
    uses=None,
    code=(),
    mpi_env=False,
    run_config=None,
    layout=True,
    output=None,
    status=None,
):
    """Define the rule of one experiment of ``study`` (its declaration): run.py's experiment of the
    same name, through the run contract (repro.runner).

    matrix    the configured jobs: one dict of the job fields per job (the study's layout.matrix); the
              expected raw files (experiment_raw) and the benchmark files (the report's run time)
    each      {field: values} for the declaration's ``each`` fields (one raw file per value per job)
    fixed     {field: value}: fields this rule has one value of (not wildcards; in --params)
    rulename  its own name: one experiment in several rules (serverless: one rule per platform,
              whose refused sizes differ)
    input     unnamed inputs (what must be built, the image); a list or a function of the wildcards
    inputs    named inputs {name: path or function of the wildcards}: passed on as --input NAME=PATH
              (ctx.inputs); one that is empty for a job (a function giving []) is left out
    resources the job's resources (n_plus_1_resources, ...)
    ranks     None: one process on the host (the experiment may start srun steps itself); else the
              number of MPI ranks (an int or a function of the wildcards): the launcher starts the
              experiment on every rank, and after it the same command with --after RC --log LOG
              records every raw file left without one (the runner's @RUN.after)
    exec      the prefix that runs the experiment in the system's image (system_exec), or ""
    wrap      a function of the wildcards: a command that wraps the launcher (mpifuse's home NFS)
    params    a function of the wildcards: more --params keys than the job's fields
    uses      {study: function of the wildcards}: --uses STUDY=<its run section>
    mpi_env   (without ranks) set the MPI environment for a host process that starts MPI steps itself
    code      more files the job's code consists of (inputs: a change re-runs it), beside the
              experiment's module and the study's layout.py; a list or a function of the wildcards
    layout    False: the study's layout.py is not part of the job's code (a run that does not import it)
    run_config  --config: a function of the wildcards (the part of the run section the job depends on, so
              a change elsewhere does not re-run it); default the study's whole run section (run_json)
    output    the job's one raw file at another path than the declaration's (a kick under kick/): every
              job field in ``fixed``, its log log/<rule>.log; give matrix=[] (nothing expected)
    status    a path pattern of the job fields: the run's failure is a result (memfs's memory limit); the
              job's output is this file holding the run's exit status, the raw file (or its failure
              record, cleared before the run with the raw file) is what the experiment recorded
    An experiment's run name (Experiment.run) may name job fields in braces: workflow_{workflow}.

    Made in a function, never in a bare loop (workflow/README.md): the shell string is a literal.
    """
    e = study.experiment(experiment)
    name = rulename or study.rule_name(experiment)
    each = each or {}
    fixed = fixed or {}
    wild = [f for f in e.job_fields if f not in fixed]
    missing = [f for f in e.each if f not in each]
    if missing:
        raise WorkflowError(f"experiment_rule({study.name}, {experiment}): give the values of {missing} (each=)")
    outputs = [
        study.raw_path(experiment, **fixed, **combo)
        for combo in paramspace.expand({f: each[f] for f in e.each})
    ]
    raw_out = "{output}"
    if output is not None:
        outputs = [output]
    elif status is not None:
        raw_out, outputs = "{params.raw}", [status]
    named = dict(inputs or {})
    rows = [
        {**row, **fixed, **combo}
        for row in matrix
        for combo in paramspace.expand({f: each[f] for f in e.each if f not in row})
    ]
    STUDY_EXPECTED.setdefault((study.name, experiment), []).extend(study.raw_path(experiment, **r) for r in rows)
    add_benchmarks(
        study.name, [study.run_benchmark(experiment, name, **{**r, **fixed}) for r in matrix]
    )

    def job_params(wc):
        p = {f: fixed[f] if f in fixed else _typed(wc[f]) for f in e.job_fields if f != "rep"}
        if params:
            p.update(params(wc))
        return shlex.quote(json.dumps(p))

    def more_args(wc, input):
        text = "".join(f" --input {n}={shlex.quote(str(input[n]))}" for n in named if str(input[n]))
        for other, section in (uses or {}).items():
            text += f" --uses {other}={section(wc)}"
        return text

    own_code = study_code(study.name, e.module, *(["layout"] if layout and os.path.exists(f"{STUDIES}/{study.name}/layout.py") else []))
    rep = str(fixed["rep"]) if "rep" in fixed else "{wildcards.rep}"
    launched = ranks is not None
    command = (
        "{params.exec} python3 -m studies.{params.study}.{params.module} {params.experiment}"
        " --config {params.cfg} --params {params.run} --rep " + rep + "{params.more}"
    )
    if launched:
        # the run contract's MPI form (repro.runner): every rank runs the experiment; after the launcher,
        # the same arguments with --after $rc clean up and record each raw file it did not finish, saying why
        shell_cmd = (
            "({params.mpi_env}; tag=r$$-$RANDOM; rc=0; {params.wrap} {params.launch} "
            + command
            + " --tag $tag --out {output} || rc=$?; "
            + command
            + " --tag $tag --out {output} --after $rc --log {log}; exit $rc) > {log} 2>&1"
        )
    elif mpi_env:
        shell_cmd = "({params.mpi_env}; " + command + f" --out {raw_out}) > {{log}} 2>&1"
    else:
        shell_cmd = command + f" --out {raw_out} > {{log}} 2>&1"
    if status is not None:  # an earlier run's raw file or failure record goes first: the output is the status
        shell_cmd = "rm -f {params.raw} {params.failed}; " + shell_cmd + " && rc=0 || rc=$?; echo $rc > {output}"

    rule:
        name:
            name
        input:
            input,
            code=(lambda wc: own_code + list(code(wc))) if callable(code) else own_code + list(code),
            **named,
        output:
            outputs,
        log:
            f"{study.results}/log/{name}.log" if output is not None else study.run_log(experiment, **fixed),
        benchmark:
            study.run_benchmark(experiment, name, **fixed)
        wildcard_constraints:
            **{f: e.constraint(f) for f in wild},
        resources:
            **resources,
        params:
            exec=exec,
            study=study.name,
            module=e.module,
            experiment=(lambda wc: e.entry.format(**fixed, **wc)) if "{" in e.entry else e.entry,
            cfg=run_config or (lambda wc: run_json(study.name)),
            raw=lambda wc: study.raw_path(experiment, **fixed, **wc) if status else "",
            failed=lambda wc: study.raw_path(experiment, **fixed, **wc).replace("/raw/", "/failed/", 1) if status else "",
            run=job_params,
            more=more_args,
            mpi_env=MPI_ENV,
            launch=(lambda wc: mpi_launch(ranks(wc) if callable(ranks) else ranks)) if launched else "",
            wrap=(lambda wc: wrap(wc)) if wrap else "",
        shell:
            shell_cmd


def experiment_expected(study, *experiments):
    """The raw files the configuration matrix of each experiment expects (default: all the study's)."""
    names = experiments or [x.name for x in study.experiments]
    return [p for e in names for p in STUDY_EXPECTED[(study.name, e)]]


def experiment_raw(study, *experiments):
    """An input function (an aggregate's raw files): experiment_expected, or under allow_incomplete
    those of them that exist (a report from what ran). Looked up when the plan is made."""

    def raw(wildcards=None):
        expected = experiment_expected(study, *experiments)
        if ALLOW_INCOMPLETE:
            return [p for p in expected if os.path.exists(p)]
        return expected

    return raw
