package io.catalogext.shim.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The longest vended prefix a path starts with (the Python twin: tests/unit/catalog/test_longest_prefix.py). */
public class PrefixesTest {
  private static final List<String> VENDED = List.of("s3://b/", "s3://b/db/t/", "s3://b/db/");

  @Test
  void theLongestPrefixThePathStartsWithWins() {
    assertEquals("s3://b/db/t/", Prefixes.longest(VENDED, "s3://b/db/t/data/f.parquet"));
    assertEquals("s3://b/db/", Prefixes.longest(VENDED, "s3://b/db/u/data/f.parquet"));
    assertEquals("s3://b/", Prefixes.longest(VENDED, "s3://b/other"));
  }

  @Test
  void noPrefixOrNoPathIsNull() {
    assertNull(Prefixes.longest(VENDED, "s3://c/db/t/data/f.parquet"));
    assertNull(Prefixes.longest(VENDED, null));
    assertNull(Prefixes.longest(List.of(), "s3://b/x"));
  }
}
