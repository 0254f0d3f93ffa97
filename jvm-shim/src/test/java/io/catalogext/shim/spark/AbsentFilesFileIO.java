package io.catalogext.shim.spark;

import java.util.Map;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * A store in which no file exists, for tests whose tables have no files: Iceberg's default for a
 * {@code file:} location is HadoopFileIO, and Hadoop's {@code UserGroupInformation} calls
 * {@code Subject.getSubject}, which JDK 24 and later refuse, so a Spark test on the newest JDK
 * could not even ask whether a file exists.
 */
public class AbsentFilesFileIO implements FileIO {
  private static final long serialVersionUID = 1L;

  @Override
  public void initialize(Map<String, String> properties) {}

  @Override
  public InputFile newInputFile(String path) {
    return new InputFile() {
      @Override
      public long getLength() {
        throw new NotFoundException("%s: no file exists in this test store", path);
      }

      @Override
      public SeekableInputStream newStream() {
        throw new NotFoundException("%s: no file exists in this test store", path);
      }

      @Override
      public String location() {
        return path;
      }

      @Override
      public boolean exists() {
        return false;
      }
    };
  }

  @Override
  public OutputFile newOutputFile(String path) {
    throw new UnsupportedOperationException(path + ": this test store is read-only");
  }

  @Override
  public void deleteFile(String path) {
    throw new UnsupportedOperationException(path + ": this test store is read-only");
  }
}
