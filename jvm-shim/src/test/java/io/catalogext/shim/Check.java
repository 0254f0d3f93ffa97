package io.catalogext.shim;

import java.util.Objects;

/** Assertions for the shim's unit tests (see {@link UnitTestRunner} for why there is no JUnit). */
final class Check {
  private Check() {}

  interface Body {
    void run() throws Exception;
  }

  static void isTrue(boolean condition, String what) {
    if (!condition) {
      throw new AssertionError(what);
    }
  }

  static void equal(Object expected, Object actual, String what) {
    if (!Objects.equals(expected, actual)) {
      throw new AssertionError(what + ": expected <" + expected + "> but was <" + actual + ">");
    }
  }

  /** Runs {@code body}, which must throw {@code type}; returns the exception for more checks. */
  static <T extends Throwable> T raises(Class<T> type, Body body) {
    try {
      body.run();
    } catch (Throwable t) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
      throw new AssertionError("expected " + type.getSimpleName() + " but got " + t, t);
    }
    throw new AssertionError("expected " + type.getSimpleName() + " but nothing was thrown");
  }
}
