package io.catalogext.shim.wire;

import io.catalogext.shim.errors.UntrustedOriginException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Origins are parsed and canonicalised once (scheme, host case, default ports, international
 * names, trailing dot, IPv6), user info and anything else unrecognised refused; a trust set holds
 * the user's origins only.
 */
public class OriginTest {
  private static Origin o(String url) {
    return Origin.of(url);
  }

  @Test
  void testSpellingsOfOneOriginAreEqual() {
    assertEquals(o("https://catalog.example.com"), o("HTTPS://Catalog.Example.COM:443/api/v1?x=1#f"), "case, default port");
    assertEquals(o("http://c.example"), o("http://c.example:80"), "http default port");
    assertEquals(o("https://c.example."), o("https://c.example/"), "trailing dot");
    assertEquals(o("https://XN--bcher-kva.example"), o("https://xn--bcher-kva.example"), "an international name, ASCII form");
    assertEquals(o("http://[::1]:8181"), o("http://[::1]:8181/x"), "IPv6");
    assertThrows(IllegalArgumentException.class, () -> o("https://BÜCHER.example/x"), "non-ASCII: trust-rules.json");
  }

  @Test
  void testOtherOriginsDiffer() {
    assertNotEquals(o("https://c.example"), o("http://c.example"), "scheme");
    assertNotEquals(o("https://c.example"), o("https://c.example:8443"), "port");
    assertNotEquals(o("https://c.example"), o("https://c.example.evil"), "host");
    assertNotEquals(o("http://127.0.0.1:80"), o("http://2130706433:80"), "another spelling of an address is another origin (refused, never wrongly allowed)");
  }

  @Test
  void testUnrecognisedUrlsAreRefused() {
    for (String bad : new String[] {"https://user:pw@c.example", "https://tok@c.example", "ftp://c.example",
        "file:///etc/passwd", "https://", "https://c.example:0", "https://c.example:65536", "https://c.example:8x",
        "https://c%2eexample", "https://[::1", "v1/relative/path", null}) {
      assertThrows(IllegalArgumentException.class, () -> Origin.of(bad), String.valueOf(bad));
    }
    assertTrue(Origin.isAbsolute("HTTPS://x") && !Origin.isAbsolute("v1/x") && !Origin.isAbsolute("//x/y"), "absolute");
  }

  @Test
  void testTheTrustSetIsTheUsersOwn() {
    TrustedOrigins trust = TrustedOrigins.fromUserProperties("c", Map.of(
        "uri", "https://catalog.example/api", "oauth2-server-uri", "https://idp.example/token",
        "s3.signer.uri", "v1/relative", "catalog-ext.trusted-origins", " https://extra.example:8443 ,http://[::1]:9 ",
        "header.X", "https://not-an-origin-source.example"));
    assertEquals("https://catalog.example:443,https://idp.example:443,https://extra.example:8443,http://[::1]:9",
        trust.sealed(), "the user's origins; a relative URL adds none, header values are no origins");
    assertTrue(trust.allows(URI.create("https://CATALOG.example/v1/config")), "the catalog");
    assertFalse(trust.allows(URI.create("https://catalog.example:8443/v1/config")), "another port");
    assertEquals(trust.sealed(), TrustedOrigins.fromSealed("c", trust.sealed()).sealed(), "sealed and read back");
    UntrustedOriginException e = assertThrows(UntrustedOriginException.class,
        () -> trust.check(URI.create("https://evil.example/v1/sign"), "POST v1/sign"));
    assertTrue(e.getMessage().startsWith("catalog-ext refused to send POST v1/sign for catalog c to https://evil.example:443")
        && !e.getMessage().contains("\n"), e.getMessage());
  }

  @Test
  void testABadTrustedOriginIsAOneLineConfigurationError() {
    for (String bad : new String[] {"https://x.example/path", "https://u@x.example", "x.example"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> TrustedOrigins.fromUserProperties("c", Map.of("uri", "https://c.example", "catalog-ext.trusted-origins", bad)));
      assertTrue(e.getMessage().startsWith("Bad catalog property catalog-ext.trusted-origins: ") && !e.getMessage().contains("\n"),
          e.getMessage());
    }
    IllegalArgumentException uri = assertThrows(IllegalArgumentException.class,
        () -> TrustedOrigins.fromUserProperties("c", Map.of("uri", "https://user:pw@c.example")));
    assertTrue(uri.getMessage().startsWith("Bad catalog property uri: it carries user info") && !uri.getMessage().contains("pw"),
        uri.getMessage());
  }

  @Test
  void testWhereAServerNamedAnOriginIsNamedInTheRefusal() {
    TrustedOrigins trust = TrustedOrigins.fromUserProperties("c", Map.of("uri", "https://c.example"));
    trust.noteServerUrls("/v1/config overrides", Map.of("oauth2-server-uri", "https://idp.evil/token", "page-size", "7"));
    UntrustedOriginException e = assertThrows(UntrustedOriginException.class,
        () -> trust.check(URI.create("https://idp.evil/token"), "the OAuth2 token request (POST)"));
    assertTrue(e.getMessage().contains("(named by /v1/config overrides oauth2-server-uri)"), e.getMessage());
  }
}
