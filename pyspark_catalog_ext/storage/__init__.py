"""Talking to object stores without PyIceberg: the remote-signer client (`signing`), streaming
uploads in bounded parts to S3, GCS and ADLS (`part_upload`, `s3upload`, `storeupload`), and which
account or token a store request is for (`accounts`). PyIceberg's FileIOs (`pyiceberg_ext/`) use them."""
