"""The embedded SeaweedFS lakehouse, its remote signer, and the demo."""
