"""Policies, policy-driven maintenance, the event stream and notifications."""
