package io.catalogext.shim;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Comparator;

/**
 * Runs the shim's Java unit tests: every public no-argument method whose name starts with
 * {@code test} in each class named on the command line, on a fresh instance.
 *
 * <p>Why not JUnit: this project builds with javac alone and has no Maven repository to fetch
 * JUnit from (only PyPI, Debian and npm are reachable), so the runner is these few lines. pytest
 * ({@code tests/unit/test_java_units.py}) compiles and runs it and reports one result per test class.
 *
 * <p>Output: one line per test, {@code PASS Class.method} or {@code FAIL Class.method: reason};
 * the exit status is 1 when any test failed or a class had no tests.
 */
public final class UnitTestRunner {
  private UnitTestRunner() {}

  public static void main(String[] args) throws Exception {
    int failed = 0;
    for (String name : args) {
      Class<?> cls = Class.forName(name);
      Method[] tests =
          Arrays.stream(cls.getDeclaredMethods())
              .filter(m -> m.getName().startsWith("test"))
              .filter(m -> Modifier.isPublic(m.getModifiers()) && m.getParameterCount() == 0)
              .sorted(Comparator.comparing(Method::getName))
              .toArray(Method[]::new);
      if (tests.length == 0) {
        System.out.println("FAIL " + cls.getSimpleName() + ": no public test* methods");
        failed++;
      }
      for (Method test : tests) {
        String id = cls.getSimpleName() + "." + test.getName();
        try {
          Object instance = Modifier.isStatic(test.getModifiers()) ? null : cls.getDeclaredConstructor().newInstance();
          test.invoke(instance);
          System.out.println("PASS " + id);
        } catch (InvocationTargetException e) {
          failed++;
          Throwable cause = e.getCause();
          System.out.println("FAIL " + id + ": " + cause.getClass().getSimpleName() + ": " + oneLine(cause.getMessage()));
          cause.printStackTrace(System.err);
        }
      }
    }
    System.out.flush();
    System.exit(failed == 0 ? 0 : 1);
  }

  private static String oneLine(String s) {
    return s == null ? "" : s.replace('\n', ' ');
  }
}
