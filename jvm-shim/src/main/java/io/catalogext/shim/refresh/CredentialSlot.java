package io.catalogext.shim.refresh;

/** The current credentials for one storage prefix of one table; what a provider holds on to. */
public final class CredentialSlot {
  public volatile CredentialSnapshot current;
  /** Touched by readers (write only when false), cleared by the ticker: cheap usage tracking. */
  volatile boolean used;

  CredentialSlot(CredentialSnapshot initial) {
    this.current = initial;
  }
}
