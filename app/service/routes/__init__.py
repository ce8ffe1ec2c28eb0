"""One router per resource: triage, batches, health and metrics."""
