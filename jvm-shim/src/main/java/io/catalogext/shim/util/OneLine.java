package io.catalogext.shim.util;

/** Exceptions as the one line an error message shows. */
public final class OneLine {
  private OneLine() {}

  /** {@code e}'s message with its line breaks folded (its class name when it has none). */
  public static String of(Throwable e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return message.replaceAll("\\s+", " ").trim();
  }
}
