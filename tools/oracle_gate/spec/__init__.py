"""What a claim is: the oracle file schema, generators, samples, verdicts, the views the
actions exchange and the rules of numbers and names they share. Pure: no git, no subprocess, no
file system beyond the bytes a caller hands in. Exactly what the judge may load (docs/design.md
section 1).

- `kinds.py`: the row kinds, one `Kind` record each, looked up instead of named.
- `schema.py`: oracle file schema 1: parsing and validation of `oracles/*.toml`.
- `call_fields.py`: the fields of a row that say how the caller reaches real code and what is judged.
- `values.py`: the number and name rules that rows and their generators share.
- `generate.py`: generated samples: the `[invariant.generate]` vocabulary, its validation and drawing.
- `annotations.py`: the generators (and builders) a function's type annotations give, read from its syntax tree.
- `seeds.py`: the constants a function compares its inputs with, and strings its patterns match, for those generators.
- `samples.py`: blob contents: strict JSON parsing and the sample shape each kind expects.
- `stream.py`: the checks of a blob read in pieces, without holding the whole blob.
- `encoding.py`: the invisible reasons a TOML or JSON file cannot be parsed, in plain words.
- `toml_text.py`: TOML text of an oracle row, for the files the gate writes.
- `views.py`: the views of a suite the build writes: inputs, reference inputs, expectations.
- `verdicts.py`: what "pass" means for each kind.
- `judgement.py`: judging observations against the expectations view, digests and failing samples.
- `ran_record.py`: the coverage record: the production functions a row's calls entered.
- `raised.py`: expected exceptions: `raises` names, raised results and their verdict.
"""
