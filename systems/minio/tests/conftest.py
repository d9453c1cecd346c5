from systems.storage_common.conftest_minio import minio_built  # noqa: F401
