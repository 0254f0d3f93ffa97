package io.catalogext.shim.refresh;

/** Where a table entry gets fresh credentials: the catalog or Python on the driver, the driver elsewhere. */
public interface EntryRefresher {
  /** Fetches fresh credentials for the entry. Throws with a message that names what failed. */
  RefreshResult fetch(RefreshSubject entry) throws Exception;

  /** Whether this JVM asks the catalog (or a Python source) itself; executors ask the driver. */
  default boolean drivesRefresh() {
    return true;
  }
}
