"""Who may start a tick (bearer secret, signed tokens, QStash, GitHub OIDC) and the inbound webhooks' signature verifiers."""
