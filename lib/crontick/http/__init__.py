"""HTTP plumbing: capped reads of inbound bodies, the outbound client, the network guard for users' URLs, the mount prefix."""
