package io.catalogext.shim.refresh;

/** The catalog's refresh strategies, in the documented order; {@link #label} is what status and logs show. */
public enum RefreshStrategy {
  REFRESH_TOKEN("storage-refresh-token"),
  REFRESH_ENDPOINT("refresh-endpoint"),
  RESTAGE("re-stage"),
  CREDENTIALS_ENDPOINT("credentials-endpoint"),
  RELOAD("reload");

  final String label;

  RefreshStrategy(String label) {
    this.label = label;
  }

  @Override
  public String toString() {
    return label;
  }
}
