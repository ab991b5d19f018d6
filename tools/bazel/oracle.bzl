"""Public entry point for oracle rules. Load `oracle_suite` and `oracle_test` from here."""

load("//tools/bazel/private:oracle_suite.bzl", _OracleSuiteInfo = "OracleSuiteInfo", _oracle_suite = "oracle_suite")
load("//tools/bazel/private:oracle_test.bzl", _oracle_test = "oracle_test")

OracleSuiteInfo = _OracleSuiteInfo
oracle_suite = _oracle_suite
oracle_test = _oracle_test
