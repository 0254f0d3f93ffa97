package io.catalogext.shim.refresh;

/** Where a table entry gets fresh credentials: Python on the driver, the driver elsewhere. */
public interface EntryRefresher {
  /** Fetches fresh credentials for the entry. Throws with a message that names what failed. */
  RefreshResult fetch(TableEntry entry) throws Exception;
}
