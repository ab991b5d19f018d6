"""Public entry point for hash-pinned oracle inputs. Load `oracle_suite` from here."""

load("//tools/bazel/private:oracle_suite.bzl", _oracle_suite = "oracle_suite")

oracle_suite = _oracle_suite
