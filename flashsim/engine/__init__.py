"""The simulation kernel: flows (max-min fair sharing), queues, randomness, probes."""
