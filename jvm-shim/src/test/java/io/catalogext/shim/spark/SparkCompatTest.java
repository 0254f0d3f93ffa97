package io.catalogext.shim.spark;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.junit.jupiter.api.Test;

/**
 * {@link SparkCompat} on the Spark of the build's profile (3.5, 4.0 or 4.1): it finds
 * {@code Dataset.ofRows} where this Spark keeps it and runs a command plan eagerly, as the staged
 * write does. On a real local SparkSession.
 */
public class SparkCompatTest {
  @Test
  void testACommandPlanRunsEagerlyOnThisSpark() throws Exception {
    SparkSession spark =
        SparkSession.builder()
            .master("local[1]")
            .appName("spark-compat-test")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.sql.warehouse.dir", Files.createTempDirectory("spark-compat-warehouse").toString())
            .getOrCreate();
    try {
      LogicalPlan plan =
          spark.sessionState().sqlParser().parsePlan("CREATE OR REPLACE TEMPORARY VIEW spark_compat_probe AS SELECT 1 AS x");
      SparkCompat.run(spark, plan);
      assertTrue(spark.catalog().tableExists("spark_compat_probe"), "the command ran when handed to ofRows");
    } finally {
      spark.stop();
    }
  }
}
