"""Shadow mode's pure part: how a decision compares with another scheduler's binding, and
the tally of those comparisons that the report and the metrics show."""
