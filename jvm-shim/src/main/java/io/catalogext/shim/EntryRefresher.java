package io.catalogext.shim;

/** Where a table entry gets fresh credentials: Python on the driver, the driver elsewhere. */
interface EntryRefresher {
  /** Fetches fresh credentials for the entry. Throws with a message that names what failed. */
  RefreshResult fetch(TableEntry entry) throws Exception;
}
