"""What a claim is: the oracle file schema, generators, samples, verdicts, the views the
actions exchange and the rules of numbers and names they share. Pure: no git, no subprocess, no
file system beyond the bytes a caller hands in. Exactly what the judge may load (docs/design.md
section 1)."""
