"""cloudcost and the selfcheck (repro.selfcheck): the paper (002, Section 5) gives no number its claims
read -- its price tables (Tables 6 and 7) are omitted from the text and Figure 7 has no values; the only
numbers are the months of its sentences (month 1, 12 months). Every price in config/config.yaml is an
assumption with its source, so the claims are checked on the model (tests/test_cloudcost.py feeds each
builder contradicting data), not on the paper's own numbers."""

NO_PUBLISHED_INPUTS = ("paper 002 omits its price tables (6 and 7) and Figure 7's values; the claims read only "
                       "the months of Section 5.3's sentences, every price is an assumption (config/config.yaml)")
