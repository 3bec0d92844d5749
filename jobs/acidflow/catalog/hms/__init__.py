"""The Hive Metastore (HMS) side of acidflow's catalog: a thrift client for Hive 3.1's metastore
(:mod:`acidflow.catalog.hms.client`) and the converters between Hive's thrift values and
acidflow's (``ValidTxnList`` strings, ``TableValidWriteIds`` -> ``ValidWriteIdList``)."""
