"""Table 5 (paper 002): mdtest max / min / mean rates per operation and stack (means over repeats;
files, then directories where the run had them: create, stat, read, remove each),
with the published statement beside (the paper's Table 5 values did not survive the text extraction).

    python3 -m studies.storage.table5 --config CFG --measurements M --published P --out T
"""

import pandas as pd
from repro import cli, published, tidy

from studies.storage import analysis

if __name__ == "__main__":
    args, cfg = cli.parse(__doc__, "measurements", "published", "out")
    means = analysis.mdtest_means(analysis.load(args.measurements))
    cols = ["stack", "system_kind", "workers", "op", "max", "min", "mean", "std_of_mean", "repeats", "published"]
    pub = published.lookup(published.load(args.published), id="table5")
    if means.empty:
        out = pd.DataFrame(columns=cols)
    else:
        wide = means.pivot_table(index=["stack", "system_kind", "workers", "op"], columns="metric",
                                 values="mean").reset_index()
        std = means[means["metric"] == "rate"].set_index(["stack", "system_kind", "workers", "op"])
        out = wide.rename(columns={"rate": "mean", "rate_max": "max", "rate_min": "min"})
        out["std_of_mean"] = out.set_index(["stack", "system_kind", "workers", "op"]).index.map(std["std"]).values
        out["repeats"] = out.set_index(["stack", "system_kind", "workers", "op"]).index.map(std["n"]).values
        out["published"] = pub["note"] if pub is not None else ""
        rank = {op: i for i, op in enumerate(analysis.OP_LABELS)}
        out = out.assign(_o=out["op"].map(lambda o: rank.get(o, len(rank))))
        out = out.sort_values(["stack", "workers", "_o"])[cols].reset_index(drop=True)
    tidy.write_csv(out, args.out)
