package io.catalogext.shim.config;

import io.catalogext.shim.util.Json;

import java.io.IOException;
import java.io.InputStream;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Reads the specs both runtimes share (the Python package's {@code resources/*.json}, copied into
 * this jar beside the classes): the knob spec, the credential rules, the trust rules.
 */
public final class SharedSpecs {
  private SharedSpecs() {}

  /** The JSON of {@code resource}; IllegalStateException naming it when the jar lacks it or it cannot be read. */
  public static JsonNode read(String resource) {
    try (InputStream in = SharedSpecs.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(resource + " is missing from the shim jar: rebuild it with pyspark_catalog_ext.spark.jvm_deps.shim_build");
      }
      return Json.MAPPER.readTree(in);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + resource + " from the shim jar: " + e.getMessage(), e);
    }
  }
}
