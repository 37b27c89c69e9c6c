"""The domain: pure decisions and appliers. No SQL, no HTTP, no wall clock."""
