"""The Hive Metastore (HMS) backend of acidflow's catalog (docs/hms-catalog.md):
:class:`~acidflow.catalog.hms.catalog.HiveMetastoreCatalog` (``thrift://host:port``), a thrift
client for Hive 3.1's metastore (:mod:`acidflow.catalog.hms.client`), the table conversions
(:mod:`acidflow.catalog.hms.tables`) and the metastore as the side catalog's id authority
(:mod:`acidflow.catalog.hms.txns`)."""

from acidflow._extras import require

# Without the 'hms' extra, any import of this package fails with one line naming it.
require("thrift", "hms", "the Hive Metastore catalog (thrift://)")
require("pymetastore", "hms", "the Hive Metastore catalog (thrift://)")
require("thrift_sasl", "hms", "the Hive Metastore catalog's SASL/Kerberos transport")
require("gssapi", "hms", "the Hive Metastore catalog's Kerberos (GSSAPI) login")
