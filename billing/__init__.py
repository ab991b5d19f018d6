"""Demo production library judged by oracles/billing.toml: money as integer cents, never floats."""
