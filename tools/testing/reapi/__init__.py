"""Real REAPI engines (BuildGrid, PostgreSQL, a test worker) on loopback, for tests."""
