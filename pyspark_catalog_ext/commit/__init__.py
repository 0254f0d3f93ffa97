"""What to do with a commit whose answer was lost or refused, in either runtime: the decision table
(`decision`, twin of the shim's `commit/CommitDecision`), the user's commit policy (`policy`) and the
`Idempotency-Key` a catalog may honour (`idempotency`)."""
