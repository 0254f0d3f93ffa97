package io.catalogext.shim.wire;

import java.net.URI;
import org.apache.iceberg.rest.HTTPRequest.HTTPMethod;
import org.apache.iceberg.rest.ImmutableHTTPRequest;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The mapper the shim reads the catalog's REST answers with: a copy of Iceberg's own REST mapper,
 * so every setting of Iceberg's is the same here (its JsonFactory's too: no field-name interning and
 * no symbol-hash overflow check, apache/iceberg#12224, which large table metadata needs), plus the
 * shim's readers ({@link RefreshTokenCapture}, {@link RawJson}).
 *
 * <p>Iceberg's mapper ({@code RESTObjectMapper}) is package-private; {@code HTTPRequest.mapper()}
 * is public and its default is that mapper, the one Iceberg encodes request bodies with.
 */
public final class RestJson {
  private RestJson() {}

  /** A new mapper for one catalog (a catalog session registers its own readers on it). */
  public static ObjectMapper restMapper() {
    ObjectMapper mapper = icebergs().copy();
    mapper.registerModule(RefreshTokenCapture.module());
    mapper.registerModule(RawJson.module());
    return mapper;
  }

  /**
   * Iceberg's REST mapper itself, for reading and writing Iceberg's own messages (never to be
   * configured: Iceberg encodes every request body with it).
   */
  public static ObjectMapper icebergs() {
    return ImmutableHTTPRequest.builder()
        .baseUri(URI.create("http://localhost"))
        .method(HTTPMethod.GET)
        .path("v1/config")
        .build()
        .mapper();
  }
}
