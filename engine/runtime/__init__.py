"""The runtime: the writer and its committer, replies, the start-up cache, timers."""
