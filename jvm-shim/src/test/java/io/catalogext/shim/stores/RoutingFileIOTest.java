package io.catalogext.shim.stores;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.StorageCredential;
import org.junit.jupiter.api.Test;

/**
 * The shell the shim's FileIOs share: a bulk delete reaches each path's FileIO in bounded batches,
 * in order, and new properties or credentials close the FileIOs built so far and route again.
 * The delegates record what they are asked (what is routed where is the shell's whole job).
 */
public class RoutingFileIOTest {
  /** Records each bulk delete it is asked for. */
  static final class Recorder implements DelegateFileIO {
    private static final long serialVersionUID = 1L;
    final List<List<String>> deletes = new ArrayList<>();
    boolean closed;

    @Override
    public InputFile newInputFile(String path) {
      throw new UnsupportedOperationException(path);
    }

    @Override
    public OutputFile newOutputFile(String path) {
      throw new UnsupportedOperationException(path);
    }

    @Override
    public void deleteFile(String path) {
      deletes.add(List.of(path));
    }

    @Override
    public Iterable<FileInfo> listPrefix(String prefix) {
      return List.of();
    }

    @Override
    public void deletePrefix(String prefix) {}

    @Override
    public void deleteFiles(Iterable<String> paths) {
      List<String> batch = new ArrayList<>();
      paths.forEach(batch::add);
      deletes.add(batch);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  /** Paths on "a://" to one recorder, on "b://" to another; counts how often it routed anew. */
  static final class TwoWays extends RoutingFileIO {
    private static final long serialVersionUID = 1L;
    final List<Map<String, Recorder>> built = new ArrayList<>();

    @Override
    protected Routes newRoutes(Map<String, String> props, List<StorageCredential> creds) {
      Map<String, Recorder> byScheme = Map.of("a", new Recorder(), "b", new Recorder());
      built.add(byScheme);
      return new Routes() {
        @Override
        public DelegateFileIO ioFor(String path) {
          return byScheme.get(path.substring(0, 1));
        }

        @Override
        public void close() {
          byScheme.values().forEach(Recorder::close);
        }
      };
    }
  }

  @Test
  void aBulkDeleteReachesEachPathsFileIOInBoundedBatchesInOrder() {
    int paths = 2 * RoutingFileIO.DELETE_BATCH + 2; // the third batch holds one path of each
    List<String> all = IntStream.range(0, paths).mapToObj(i -> (i % 3 == 0 ? "a" : "b") + "://x/" + i).collect(Collectors.toList());
    try (TwoWays io = new TwoWays()) {
      io.deleteFiles(all);
      Map<String, Recorder> routed = io.built.get(0);
      for (String scheme : List.of("a", "b")) {
        List<List<String>> batches = routed.get(scheme).deletes;
        assertEquals(3, batches.size(), scheme + ": one call per batch of " + RoutingFileIO.DELETE_BATCH);
        assertTrue(batches.stream().allMatch(b -> b.size() <= RoutingFileIO.DELETE_BATCH));
        List<String> got = batches.stream().flatMap(List::stream).collect(Collectors.toList());
        assertEquals(all.stream().filter(p -> p.startsWith(scheme)).collect(Collectors.toList()), got);
      }
    }
  }

  @Test
  void newPropertiesOrCredentialsCloseWhatWasBuiltAndRouteAgain() {
    try (TwoWays io = new TwoWays()) {
      io.deleteFile("a://x/1");
      io.deleteFile("b://x/2");
      assertEquals(1, io.built.size(), "routed once per JVM and change");
      io.initialize(Map.of("k", "v"));
      assertTrue(io.built.get(0).values().stream().allMatch(r -> r.closed));
      io.deleteFile("a://x/3");
      io.setCredentials(List.of());
      io.deleteFile("a://x/4");
      assertEquals(3, io.built.size());
      assertEquals(Map.of("k", "v"), io.properties());
      assertEquals(List.of(List.of("a://x/4")), io.built.get(2).get("a").deletes);
      assertTrue(io.built.get(2).values().stream().noneMatch(r -> r.closed));
    }
  }
}
