"""Unit tests of the test harness itself (envtest/): not part of the compiled-wheel run, which ships no envtest."""
