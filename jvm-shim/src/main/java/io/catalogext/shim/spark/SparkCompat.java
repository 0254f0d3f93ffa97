package io.catalogext.shim.spark;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The Spark calls whose home differs between the Spark versions the shim supports, looked up at run
 * time so the one compiled shim jar (the wheel carries one) works on Spark 3.5 and on Spark 4.x.
 */
public final class SparkCompat {
  private SparkCompat() {}

  /**
   * Spark 3.5: {@code org.apache.spark.sql.Dataset.ofRows(SparkSession, LogicalPlan)}; Spark 4 moved it
   * to {@code org.apache.spark.sql.classic.Dataset} (taking the classic session, which is what a JVM
   * session is). Resolved once.
   */
  private static volatile Method ofRows;

  /** Runs {@code plan} the way {@code Dataset.ofRows} does (a command runs eagerly, here). */
  public static void run(SparkSession spark, LogicalPlan plan) {
    Method method = ofRows(spark, plan);
    try {
      method.invoke(null, spark, plan);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      if (cause instanceof Error) {
        throw (Error) cause;
      }
      throw new IllegalStateException("Spark failed running the plan: " + cause, cause);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Dataset.ofRows is not accessible on this Spark: " + e.getMessage(), e);
    }
  }

  private static Method ofRows(SparkSession spark, LogicalPlan plan) {
    Method found = ofRows;
    if (found != null) {
      return found;
    }
    for (String name : new String[] {"org.apache.spark.sql.classic.Dataset", "org.apache.spark.sql.Dataset"}) {
      Class<?> cls;
      try {
        cls = Class.forName(name, false, SparkSession.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        continue; // Spark 3.5 has no classic package
      }
      for (Method m : cls.getMethods()) {
        Class<?>[] params = m.getParameterTypes();
        if ("ofRows".equals(m.getName()) && Modifier.isStatic(m.getModifiers()) && params.length == 2
            && params[0].isInstance(spark) && params[1].isInstance(plan)) {
          ofRows = m;
          return m;
        }
      }
    }
    throw new IllegalStateException(
        "this Spark (" + spark.version() + ") has no Dataset.ofRows(session, plan); the shim supports Spark 3.5 to 4.1");
  }
}
