package io.catalogext.shim.refresh;

import io.catalogext.shim.session.CatalogSession;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The catalog sessions of this JVM: by name (the latest initialised one per name), for the classic
 * tools that name a catalog, and by id, held weakly, for the handles that name their session. An
 * entry refreshes through its own session, never by name.
 */
public final class CatalogSessions {
  private final Map<String, CatalogSession> byName = new ConcurrentHashMap<>();
  /** A closed Spark session's catalogs go with it; an entry holds its own session while it lives. */
  private final Map<String, WeakReference<CatalogSession>> byId = new ConcurrentHashMap<>();

  public void register(CatalogSession session) {
    byName.put(session.name, session);
    byId.values().removeIf(ref -> ref.get() == null);
    byId.put(session.id, new WeakReference<>(session));
  }

  /** The live catalog sessions Spark session {@code sparkSession} initialised (identity; null: none). */
  public List<CatalogSession> of(Object sparkSession) {
    List<CatalogSession> out = new ArrayList<>();
    for (WeakReference<CatalogSession> ref : byId.values()) {
      CatalogSession session = ref.get();
      if (session != null && session.ownedBy(sparkSession)) {
        out.add(session);
      }
    }
    return out;
  }

  /** The session of catalog {@code name} that Spark session {@code sparkSession} initialised, or null. */
  public CatalogSession named(String name, Object sparkSession) {
    for (CatalogSession session : of(sparkSession)) {
      if (session.name.equals(name)) {
        return session;
      }
    }
    return null;
  }

  /** The latest initialised session of catalog {@code name} in this JVM, or null. */
  public CatalogSession named(String name) {
    return byName.get(name);
  }

  /** The live session with id {@code id}, or null. */
  CatalogSession live(String id) {
    WeakReference<CatalogSession> ref = byId.get(id);
    return ref == null ? null : ref.get();
  }

  /** The sessions of this JVM, one per catalog name. */
  public Collection<CatalogSession> all() {
    return List.copyOf(byName.values());
  }
}
