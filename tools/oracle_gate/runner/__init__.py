"""The protected row runner: the caller that calls production entries and the judge that decides.

Three processes, each with one job (docs/design.md section 8):

- `observe.py` (supervisor) and `caller.py` run inside the `OracleCall` build action, whose declared
  inputs are the inputs view of the suite, the production library and the pinned packages. They
  never see a bound or an expected value. The supervisor starts one caller, sends it each row's
  inputs and writes what comes back to the observations file; a crash, a hang or a malformed
  reply becomes that row's error, never a build failure.
- `judge.py` is the oracle test's main. It imports nothing but the standard library and the gate
  package, reads the sealed expectations view and the observations, parses every reply with the
  strict JSON rules of blobs and judges it with `tools.oracle_gate.verdicts`.
"""
