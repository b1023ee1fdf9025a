/* SPDX-License-Identifier: MIT */
/* The SQLite export's schema (docs/sqlite.md): nsys's tables and values where it has them. */
#include "sqlite-schema.h"

const char sqlite_schema[] =
    "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);\n"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
    " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
    " demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,"
    " launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,"
    " gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,"
    " blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,"
    " staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,"
    " localMemoryPerThread INTEGER, localMemoryTotal INTEGER, gridId INTEGER,"
    " sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER,"
    " graphId INTEGER, callchainId INTEGER);\n"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
    " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
    " bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER,"
    " srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,"
    " dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER,"
    " virtualAddress INTEGER, copyCount INTEGER);\n"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
    " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
    " value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);\n"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,"
    " nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);\n"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL,"
    " end INTEGER NOT NULL, deviceId INTEGER, contextId INTEGER NOT NULL,"
    " greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,"
    " globalPid INTEGER, deprecatedSyncType INTEGER, syncType INTEGER NOT NULL,"
    " eventId INTEGER NOT NULL, eventSyncId INTEGER);\n"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_OVERHEAD (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,"
    " overheadType INTEGER NOT NULL);\n"
    "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER,"
    " eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT,"
    " globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER,"
    " uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,"
    " int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT,"
    " tallyTextTruncated INTEGER);\n"
    "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,"
    " busLocation TEXT, totalMemory INTEGER, smCount INTEGER, uuid TEXT, cuDevice INTEGER,"
    " computeMajor INTEGER, computeMinor INTEGER, globalPid INTEGER);\n"
    "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT,"
    " localTime TEXT);\n"
    "CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);\n"
    "CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
    "CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
    "CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
    "CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
    "CREATE TABLE ENUM_CUDA_KERNEL_LAUNCH_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT,"
    " label TEXT);\n"
    "CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
    "CREATE TABLE CUDA_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL,"
    " module INTEGER NOT NULL, unresolved INTEGER, originalIP INTEGER,"
    " stackDepth INTEGER NOT NULL, frameKind INTEGER NOT NULL, sourceFile INTEGER,"
    " line INTEGER, userFrame INTEGER NOT NULL);\n"
    "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER,"
    " deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER,"
    " address INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL,"
    " memoryOperationType INTEGER NOT NULL, callchainId INTEGER);\n"
    "CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL,"
    " typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL,"
    " cuptiName TEXT, unit TEXT, deviceId INTEGER, globalPid INTEGER);\n"
    "CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER NOT NULL,"
    " metricId INTEGER NOT NULL, value REAL NOT NULL, duration INTEGER, sample INTEGER,"
    " flags INTEGER);\n"
    "CREATE TABLE TALLY_SESSIONS (section INTEGER NOT NULL PRIMARY KEY, file TEXT NOT NULL,"
    " fileSection INTEGER NOT NULL, globalPid INTEGER NOT NULL, pid INTEGER, ppid INTEGER,"
    " host TEXT, rank TEXT, cmdline TEXT, exe TEXT, writer TEXT, source TEXT,"
    " startRealtime INTEGER, startCupti INTEGER, clockOffset INTEGER, merged INTEGER,"
    " mergeOffset INTEGER, driverVersion INTEGER, runtimeVersion INTEGER, cuptiVersion INTEGER,"
    " records INTEGER, verdict TEXT NOT NULL);\n"
    "CREATE TABLE TALLY_VERDICT (section INTEGER NOT NULL, verdict TEXT NOT NULL, code TEXT,"
    " counter TEXT, count INTEGER, text TEXT, hint TEXT);\n"
    "CREATE TABLE TALLY_LOSS_WINDOWS (section INTEGER NOT NULL, globalPid INTEGER NOT NULL,"
    " start INTEGER NOT NULL, end INTEGER NOT NULL, counterId INTEGER NOT NULL, counter TEXT,"
    " count INTEGER NOT NULL, what TEXT);\n"
    "CREATE TABLE TALLY_LEDGER (section INTEGER NOT NULL, counterId INTEGER NOT NULL,"
    " counter TEXT, value INTEGER NOT NULL, class TEXT, what TEXT);\n"
    "CREATE TABLE TALLY_LEDGER_SNAPSHOTS (section INTEGER NOT NULL, slice INTEGER NOT NULL,"
    " start INTEGER NOT NULL, end INTEGER NOT NULL, final INTEGER NOT NULL,"
    " counterId INTEGER NOT NULL, value INTEGER NOT NULL);\n"
    "CREATE TABLE TALLY_DAMAGE (file TEXT NOT NULL, section INTEGER, kind TEXT NOT NULL,"
    " offset INTEGER NOT NULL, end INTEGER NOT NULL, missingChunks INTEGER);\n"
    "CREATE TABLE TALLY_NOTES (section INTEGER NOT NULL, time INTEGER, severity INTEGER,"
    " code TEXT, text TEXT);\n"
    "CREATE TABLE TALLY_DROPS (section INTEGER NOT NULL, globalPid INTEGER NOT NULL,"
    " source TEXT NOT NULL, contextId INTEGER, deviceId INTEGER, streamId INTEGER,"
    " count INTEGER NOT NULL, meaning TEXT);\n"
    "CREATE TABLE TALLY_GPU_METRICS (section INTEGER NOT NULL, globalPid INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, uuid TEXT, state TEXT NOT NULL, chip TEXT, intervalNs INTEGER,"
    " metrics INTEGER, why TEXT, remedy TEXT, holderPid INTEGER, holderHost TEXT,"
    " holderFile TEXT);\n";

const char sqlite_indexes[] =
    "CREATE INDEX kernel_corr ON CUPTI_ACTIVITY_KIND_KERNEL (correlationId);\n"
    "CREATE INDEX kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL (start);\n"
    "CREATE INDEX kernel_short ON CUPTI_ACTIVITY_KIND_KERNEL (shortName);\n"
    "CREATE INDEX kernel_demangled ON CUPTI_ACTIVITY_KIND_KERNEL (demangledName);\n"
    "CREATE INDEX memcpy_corr ON CUPTI_ACTIVITY_KIND_MEMCPY (correlationId);\n"
    "CREATE INDEX memset_corr ON CUPTI_ACTIVITY_KIND_MEMSET (correlationId);\n"
    "CREATE INDEX runtime_corr ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId);\n"
    "CREATE INDEX runtime_name ON CUPTI_ACTIVITY_KIND_RUNTIME (nameId);\n"
    "CREATE INDEX runtime_tid_start ON CUPTI_ACTIVITY_KIND_RUNTIME (globalTid, start);\n"
    "CREATE INDEX nvtx_tid_start ON NVTX_EVENTS (globalTid, start);\n"
    "CREATE INDEX callchains_id ON CUDA_CALLCHAINS (id, stackDepth);\n"
    "CREATE INDEX windows_section ON TALLY_LOSS_WINDOWS (section, start);\n"
    "CREATE INDEX gpu_metrics_type ON GPU_METRICS (typeId, metricId, timestamp);\n";

/* nsys's enum tables, with the values it documents (CUDA memory kinds renumbered as nsys does). */
const struct enum_row enum_event_type[] = {
    {33, "NvtxCategory", "NVTX category"},
    {34, "NvtxMark", "NVTX mark"},
    {39, "NvtxThread", "NVTX thread"},
    {59, "NvtxPushPopRange", "NVTX push/pop range"},
    {60, "NvtxStartEndRange", "NVTX start/end range"},
    {75, "NvtxDomainCreate", "NVTX domain create"},
    {76, "NvtxDomainDestroy", "NVTX domain destroy"},
};
const size_t enum_event_type_count = sizeof(enum_event_type) / sizeof(enum_event_type[0]);
const struct enum_row enum_event_class[] = {
    {0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"},
    {1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"},
};
const size_t enum_event_class_count = sizeof(enum_event_class) / sizeof(enum_event_class[0]);
const struct enum_row enum_memcpy_oper[] = {
    {0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"},
    {1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"},
    {2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"},
    {3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"},
    {4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"},
    {5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"},
    {6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"},
    {7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"},
    {8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"},
    {9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"},
    {10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"},
    {11, "CUDA_MEMCPY_KIND_UVM_HTOD", "UVM Host-to-Device"},
    {12, "CUDA_MEMCPY_KIND_UVM_DTOH", "UVM Device-to-Host"},
    {13, "CUDA_MEMCPY_KIND_UVM_DTOD", "UVM Device-to-Device"},
};
const size_t enum_memcpy_oper_count = sizeof(enum_memcpy_oper) / sizeof(enum_memcpy_oper[0]);
const struct enum_row enum_mem_kind[] = {
    {0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"},
    {1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"},
    {2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"},
    {3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"},
    {4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"},
    {5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"},
    {6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"},
    {7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"},
};
const size_t enum_mem_kind_count = sizeof(enum_mem_kind) / sizeof(enum_mem_kind[0]);
const struct enum_row enum_launch_type[] = {
    {0, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"},
    {1, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Cooperative single device"},
    {2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Cooperative multi device"},
};
const size_t enum_launch_type_count = sizeof(enum_launch_type) / sizeof(enum_launch_type[0]);
const struct enum_row enum_sync_type[] = {
    {0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"},
    {1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"},
    {2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait event"},
    {3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"},
    {4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"},
};
const size_t enum_sync_type_count = sizeof(enum_sync_type) / sizeof(enum_sync_type[0]);
