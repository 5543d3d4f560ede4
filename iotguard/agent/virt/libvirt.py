# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The agent's libvirt driver (libvirt-python, the daemon nova-compute uses).

* Statistics: one ``getAllDomainStats(VIR_DOMAIN_STATS_BLOCK)`` call per
  interval for all running domains; a domain for which it returns nothing
  (the ``test:///default`` driver does that) falls back to ``blockStats``
  per disk, which has no times and no flushes.
* Mapping: domain UUID = Nova instance UUID; disks (``device='disk'`` or
  ``'lun'``) by target dev; volume id from ``<serial>``; project from Nova's
  ``<nova:owner><nova:project uuid=...>`` metadata.
* Static ceilings: the ``<iotune>`` of the persistent definition (what Nova
  and Cinder wrote at boot/attach; a live ``setBlockIoTune`` does not touch
  it). For a transient domain, the live ``<iotune>`` when the agent first
  saw it.
* Caps are recognised as ours wherever the domain goes: with a cap the
  driver records in the domain's live metadata (:data:`METADATA_NS`) each
  disk's static ceiling and the limits it applied. A live migration
  carries that record to the destination, where Nova defines the live XML
  as the persistent domain, whose ``<iotune>`` is then our cap (and whose
  metadata the record as it stood then). A disk whose persistent
  ``<iotune>`` is what either record says was applied gets
  the recorded ceiling instead (the cap still lapses at its lease, a
  release restores what Nova set), also written back into the persistent
  definition. A rebuilt domain (hard reboot, resize, rebuild...) has no
  record: its ``<iotune>`` is Nova's.
* Caps: ``setBlockIoTune(dev, params, VIR_DOMAIN_AFFECT_LIVE)`` with all
  twelve keys, exactly as computed (so the static limits come back
  exactly, bursts included). The test driver checks every value against
  its ``*_max``, 0 included (QEMU reads 0 as "no burst"); once it refuses
  a set for that reason, the driver sends ``*_max`` >= each value on that
  connection (:func:`iotguard.wire.caps.with_bursts`).
* Latency percentiles (``[agent] latency_histograms``): when the driver
  first reads a domain it sets QEMU's latency histogram on each virtio
  disk (by its ``<alias>`` in the live XML; other buses are skipped), and
  each pass reads every such domain's bins once and gives each disk's
  99th percentile since the last pass (:mod:`.histogram`), through the
  QEMU monitor (libvirt marks the domain tainted, ``custom-monitor``).
* A lost connection (daemon restart) is reopened once per failed call,
  its event callbacks registered again on the new one and the old one
  closed; while the daemon does not answer, calls raise
  :class:`~iotguard.agent.virt.base.Unavailable`. Lifecycle and device
  events come through libvirt's default event loop, run in a daemon
  thread.
"""

import collections.abc
import dataclasses
import functools
import math
import operator
import threading
from typing import Any
from typing import TypeVar
from xml.etree import ElementTree

import numpy as np
from oslo_config import cfg
from oslo_log import log as logging

from iotguard.agent.virt import base
from iotguard.agent.virt import histogram
from iotguard.wire import caps
from iotguard.wire import rates

try:
    import libvirt
except ImportError:  # pragma: no cover - checked in start()
    libvirt = None

LOG = logging.getLogger(__name__)

_NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/'
#: The namespace of iotguard's record in a domain's metadata.
METADATA_NS = 'http://openstack.org/xmlns/libvirt/iotguard/1.0'
_METADATA_KEY = 'iotguard'
#: The bulk statistics' name of each of rates.COUNTER_KEYS, in order.
_BULK_FIELDS = tuple(key.replace('_', '.') for key in rates.COUNTER_KEYS)

#: iotguard's record of a domain's caps: ``{dev: (static, applied)}``.
Record = dict[str, tuple[dict[str, int], dict[str, int]]]
#: A bulk statistics record, and what :func:`_block_fields` reads of one.
Stats = dict[str, Any]
Fields = tuple[str, collections.abc.Callable[[Stats], tuple[int, ...]],
               tuple[str, ...]]
#: :meth:`LibvirtDriver._domain`'s: domain id, {dev: Disk}, keys, fields.
Entry = tuple[int, dict[str, base.Disk], tuple[base.Key, ...],
              tuple[Fields, ...]]
T = TypeVar('T')

_event_loop_lock = threading.Lock()
_event_loop_started = False


def _start_event_loop() -> None:
    """libvirt's default event loop, once per process, in a thread."""
    global _event_loop_started
    with _event_loop_lock:
        if _event_loop_started:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run() -> None:
            while True:
                try:
                    libvirt.virEventRunDefaultImpl()
                except Exception:
                    LOG.exception('libvirt event loop iteration failed')

        threading.Thread(target=run, name='libvirt-events',
                         daemon=True).start()
        _event_loop_started = True


def parse_domain_xml(uuid: str, xml: str) -> dict[str, base.Disk]:
    """``{dev: Disk}`` from one domain XML (statics from its ``<iotune>``)."""
    root = ElementTree.fromstring(xml)
    project_id = None
    for elem in root.iter():
        if (elem.tag.startswith('{' + _NOVA_NS) and
                elem.tag.endswith('}project')):
            project_id = elem.get('uuid')
            break
    disks = {}
    for disk in root.findall('./devices/disk'):
        if disk.get('device', 'disk') not in ('disk', 'lun'):
            continue
        target = disk.find('target')
        dev = None if target is None else target.get('dev')
        if not dev:
            continue
        static = {key: int(disk.findtext('iotune/' + key) or 0)
                  for key in caps.IOTUNE_KEYS}
        disks[dev] = base.Disk(instance_uuid=uuid, dev=dev,
                               volume_id=disk.findtext('serial') or None,
                               project_id=project_id, static=static)
    return disks


def parse_disk_buses(xml: str) -> dict[str, tuple[str | None, str | None]]:
    """``{dev: (bus, alias)}`` of a live domain XML's disks."""
    out = {}
    for disk in ElementTree.fromstring(xml).findall('./devices/disk'):
        target, alias = disk.find('target'), disk.find('alias')
        if target is not None and target.get('dev'):
            out[target.get('dev', '')] = (
                target.get('bus'), None if alias is None
                else alias.get('name'))
    return out


def _limits_of(elem: ElementTree.Element) -> dict[str, int]:
    return caps.full({k: int(v) for k, v in elem.attrib.items()
                      if k in caps.IOTUNE_KEYS})


def parse_cap_record(xml: str) -> Record:
    """``{dev: (static, applied)}`` from iotguard's record in a domain XML."""
    root = ElementTree.fromstring(xml)
    record = root.find('./metadata/{%s}caps' % METADATA_NS)
    out: Record = {}
    # libvirt puts the whole element in the namespace, children included.
    for disk in record if record is not None else ():
        dev = disk.get('dev')
        static = disk.find('{%s}static' % METADATA_NS)
        applied = disk.find('{%s}applied' % METADATA_NS)
        if dev and static is not None and applied is not None:
            out[dev] = (_limits_of(static), _limits_of(applied))
    return out


def cap_record_xml(record: Record) -> str | None:
    """The metadata element for ``{dev: (static, applied)}``, or None."""
    if not record:
        return None
    root = ElementTree.Element('caps')
    for dev, (static, applied) in sorted(record.items()):
        disk = ElementTree.SubElement(root, 'disk', dev=dev)
        for name, limits in (('static', static), ('applied', applied)):
            ElementTree.SubElement(disk, name, {
                k: str(v) for k, v in caps.full(limits).items() if v})
    return ElementTree.tostring(root, encoding='unicode')


@functools.lru_cache(maxsize=None)
def _block_fields(i: int) -> Fields:
    """The field names of block ``i``: name, counters' getter, counters.

    Made once per index, since every pass reads them for every disk; the
    counters in the order of ``rates.COUNTER_KEYS``.
    """
    prefix = 'block.%d.' % i
    keys = tuple(prefix + field for field in _BULK_FIELDS)
    return prefix + 'name', operator.itemgetter(*keys), keys


def parse_bulk_block_stats(stats: Stats) -> dict[str, tuple[int, ...]]:
    """``{dev: counters}`` from one getAllDomainStats record.

    ``counters``: a tuple in the order of ``rates.COUNTER_KEYS``, 0 for a
    counter the record lacks (rates count a missing counter as 0).
    """
    out: dict[str, tuple[int, ...]] = {}
    for i in range(stats.get('block.count', 0)):
        name_key, counters, keys = _block_fields(i)
        name = stats.get(name_key)
        if name is None or name in out:
            continue
        try:
            out[name] = counters(stats)
        except KeyError:
            out[name] = tuple(stats.get(key, 0) for key in keys)
    return out


def _block_stats(dom: Any, dev: str) -> tuple[int, ...]:
    """A disk's counters from ``blockStats``: no times, no flushes.

    For a domain the bulk read gave nothing for (the test driver).
    """
    # -1: not supported
    rd_req, rd_bytes, wr_req, wr_bytes, _errs = (
        max(v, 0) for v in dom.blockStats(dev))
    return (rd_req, rd_bytes, 0, wr_req, wr_bytes, 0, 0)


def _is_disconnect(error: Any) -> bool:
    code = error.get_error_code()
    if code in (libvirt.VIR_ERR_INVALID_CONN, libvirt.VIR_ERR_NO_CONNECT):
        return True
    return (code in (libvirt.VIR_ERR_SYSTEM_ERROR,
                     libvirt.VIR_ERR_INTERNAL_ERROR) and
            error.get_error_domain() in (libvirt.VIR_FROM_REMOTE,
                                         libvirt.VIR_FROM_RPC))


class LibvirtDriver(base.Driver):

    def __init__(self, conf: cfg.ConfigOpts, uri: str | None = None) -> None:
        self.uri = uri or conf.agent.libvirt_uri
        self._conn: Any = None
        self._lock = threading.RLock()
        self._callback: base.Callback | None = None
        self._needs_bursts = False
        # by uuid; refreshed when the domain id changes.
        self._domains: dict[str, Entry] = {}
        self._histograms: bool = conf.agent.latency_histograms
        # by uuid: the domain id the histograms were set on, {dev: alias}
        self._aliases: dict[str, tuple[int, dict[str, str]]] = {}
        self._intervals = histogram.Intervals()

    # -- connection ------------------------------------------------------
    def start(self, lifecycle_callback: base.Callback | None = None) -> None:
        if libvirt is None:
            raise RuntimeError('libvirt-python is not installed; the '
                               'libvirt driver needs it')
        libvirt.registerErrorHandler(lambda ctxt, err: None, None)
        self._callback = lifecycle_callback
        if lifecycle_callback is not None:
            _start_event_loop()
        self._connect()

    def stop(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except libvirt.libvirtError:
                pass

    def _connect(self) -> None:
        with self._lock:
            old, self._conn = self._conn, None
            if old is not None:
                try:
                    old.close()   # what is left of it
                except libvirt.libvirtError:
                    pass
            conn = libvirt.open(self.uri)
            if self._callback is not None:
                conn.domainEventRegisterAny(
                    None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                    self._on_lifecycle, None)
                for event_id in ('VIR_DOMAIN_EVENT_ID_DEVICE_ADDED',
                                 'VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED'):
                    conn.domainEventRegisterAny(
                        None, getattr(libvirt, event_id),
                        self._on_device, None)
            self._conn = conn
            self._domains.clear()
            self._aliases.clear()
            LOG.info('Connected to libvirt at %s', self.uri)

    def _call(self, fn: collections.abc.Callable[[Any], T]) -> T:
        """Run ``fn(conn)``; reopen a lost connection once.

        Thread-safe: of several threads that hit the same dead connection
        (RPC and the interval timer), only the first reopens it.
        """
        with self._lock:
            if self._conn is None:
                self._reconnect()
            conn = self._conn
        try:
            return fn(conn)
        except libvirt.libvirtError as e:
            if not _is_disconnect(e):
                raise
            LOG.warning('Lost the libvirt connection (%s); reconnecting',
                        e)
        with self._lock:
            if self._conn is conn:
                self._reconnect()
            conn = self._conn
        return fn(conn)

    def _reconnect(self) -> None:
        try:
            self._connect()
        except libvirt.libvirtError as e:
            raise base.Unavailable('libvirt at %s: %s' % (self.uri, e))

    # -- events -----------------------------------------------------------
    def _notify(self, dom: Any, event: str) -> None:
        uuid = dom.UUIDString()
        self.forget(uuid)
        try:
            assert self._callback is not None   # the events need one
            self._callback(uuid, event)
        except Exception:
            LOG.exception('Lifecycle callback failed for %s', uuid)

    def _on_lifecycle(self, conn: Any, dom: Any, event: int, detail: int,
                      opaque: object) -> None:
        self._notify(dom, {
            libvirt.VIR_DOMAIN_EVENT_STARTED: base.EVENT_STARTED,
            libvirt.VIR_DOMAIN_EVENT_RESUMED: base.EVENT_STARTED,
            libvirt.VIR_DOMAIN_EVENT_STOPPED: base.EVENT_STOPPED,
            libvirt.VIR_DOMAIN_EVENT_DEFINED: base.EVENT_DEFINED,
        }.get(event, base.EVENT_OTHER))

    def _on_device(self, conn: Any, dom: Any, dev_alias: str,
                   opaque: object) -> None:
        self._notify(dom, base.EVENT_DEVICE)

    def forget(self, instance_uuid: str) -> None:
        with self._lock:
            self._domains.pop(instance_uuid, None)
            self._aliases.pop(instance_uuid, None)

    # -- disks --------------------------------------------------------------
    def _domain(self, dom: Any) -> Entry:
        """The domain's :data:`Entry`, read once per domain id."""
        uuid = dom.UUIDString()
        dom_id = dom.ID()
        with self._lock:
            cached = self._domains.get(uuid)
        if cached is not None and cached[0] == dom_id:
            return cached
        flags = (libvirt.VIR_DOMAIN_XML_INACTIVE if dom.isPersistent()
                 else 0)
        defined = dom.XMLDesc(flags)
        disks = parse_domain_xml(uuid, defined)
        live = dom.XMLDesc(0)
        live_disks = parse_domain_xml(uuid, live) if flags else disks
        if flags:
            # Disks only in the live definition (hot-plugged without
            # AFFECT_CONFIG) take their live iotune as the ceiling.
            for dev, disk in live_disks.items():
                disks.setdefault(dev, disk)
        # Where <iotune> is our cap, the recorded static ceiling: the
        # iotune is the one a record says was applied (the live record, or
        # the one the persisted live definition carried: the cap may have
        # changed here since), or (a cap changed while the guest migrated)
        # the live one persisted as it was. A write-back libvirt refused
        # (the migration's job still running) leaves the domain unread, to
        # be tried again next pass.
        restored = True
        recorded = parse_cap_record(live)
        carried = parse_cap_record(defined) if flags else {}
        for dev in recorded.keys() | carried.keys():
            capped = disks.get(dev)
            if capped is None:
                continue
            found = caps.full(capped.static)
            records = [r for r in (recorded.get(dev), carried.get(dev)) if r]
            static = records[0][0]
            live_iotune = (caps.full(live_disks[dev].static)
                           if dev in live_disks else None)
            if (found in [applied for _static, applied in records]
                    or found != static and found == live_iotune):
                LOG.info('The iotune of %s/%s is a cap iotguard applied (the '
                         'domain came with it, e.g. a live migration); its '
                         'static ceiling is the recorded one', uuid, dev)
                disks[dev] = dataclasses.replace(capped, static=static)
                if flags and static != capped.static:
                    restored &= self._restore_static(dom, dev, static)
        # Where the bulk read should have each disk: the same order as
        # the definition's disks, unless it has others (a CD-ROM).
        fields = tuple(_block_fields(i) for i in range(len(disks)))
        entry = (dom_id, disks, tuple(disk.key for disk in disks.values()),
                 fields)
        if restored:
            with self._lock:
                self._domains[uuid] = entry
        if self._histograms:
            self._set_histograms(dom, uuid, dom_id, live, disks)
        return entry

    def _set_histograms(self, dom: Any, uuid: str, dom_id: int, live: str,
                        disks: dict[str, base.Disk]) -> None:
        """QEMU's latency histogram on each virtio disk, once per domain id.

        Setting it starts its counts from 0: the disk's last reading is
        dropped, its next pass gives no percentile.
        """
        with self._lock:
            if self._aliases.get(uuid, (None,))[0] == dom_id:
                return
        aliases = {}
        for dev, (bus, alias) in parse_disk_buses(live).items():
            if dev not in disks:
                continue
            if bus != 'virtio' or not alias:
                LOG.debug('No latency histogram for %s/%s (bus %s, alias '
                          '%s): virtio disks only; its mean latency is '
                          'judged', uuid, dev, bus, alias)
                continue
            try:
                histogram.set_bounds(dom, alias)
            except (libvirt.libvirtError, histogram.Error) as e:
                LOG.warning('Could not set the latency histogram of %s/%s '
                            '(its mean latency is judged): %s', uuid, dev, e)
                continue
            self._intervals.reset((uuid, dev))
            aliases[dev] = alias
        with self._lock:
            self._aliases[uuid] = (dom_id, aliases)

    def _p99_ms(self, dom: Any, uuid: str,
                devs: collections.abc.Iterable[str]) -> list[float]:
        """Each disk's p99 since the last pass (``nan``: none)."""
        with self._lock:
            aliases = self._aliases.get(uuid, (None, {}))[1]
        bins: dict[str, Any] = {}
        if aliases:
            try:
                bins = histogram.read(dom)
            except (libvirt.libvirtError, histogram.Error) as e:
                LOG.debug('No latency histograms for %s: %s', uuid, e)
        return [self._intervals.p99_ms((uuid, dev), bins[aliases[dev]])
                if aliases.get(dev) in bins else math.nan for dev in devs]

    def list_disks(self) -> dict[base.Key, base.Disk]:
        out: dict[base.Key, base.Disk] = {}
        for dom in self._call(lambda conn: conn.listAllDomains(
                libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)):
            try:
                _id, disks, keys, _fields = self._domain(dom)
            except libvirt.libvirtError as e:
                # Gone between the list and the read: next interval.
                LOG.debug('Skipping domain %s: %s', dom.UUIDString(), e)
                continue
            out.update(zip(keys, disks.values()))
        return out

    # -- statistics ---------------------------------------------------------
    def get_block_stats(self) -> rates.Readings:
        """One bulk read, parsed straight into one array: no dict per disk."""
        keys: list[base.Key] = []
        flat: list[int] = []
        p99: list[float] | None = [] if self._histograms else None
        for dom, stats in self._call(lambda conn: conn.getAllDomainStats(
                libvirt.VIR_DOMAIN_STATS_BLOCK,
                libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE)):
            try:
                _id, disks, dom_keys, fields = self._domain(dom)
                try:
                    rows = [counters(stats) for (name, counters, _keys), dev
                            in zip(fields, disks) if stats[name] == dev]
                except KeyError:
                    rows = []
                if len(rows) != len(disks):
                    by_dev = parse_bulk_block_stats(stats)
                    rows = [by_dev.get(dev) or _block_stats(dom, dev)
                            for dev in disks]
            except libvirt.libvirtError as e:
                LOG.debug('No block statistics for %s: %s',
                          dom.UUIDString(), e)
                continue
            keys.extend(dom_keys)
            for row in rows:
                flat.extend(row)
            if p99 is not None:
                p99.extend(self._p99_ms(dom, dom.UUIDString(), disks))
        if p99 is not None:
            self._intervals.forget(keys)
        return rates.Readings(keys, np.array(flat, dtype=np.uint64).reshape(
            len(keys), len(rates.COUNTER_KEYS)),
            None if p99 is None else np.array(p99, dtype=np.float64))

    # -- iotune -------------------------------------------------------------
    def get_iotune(self, instance_uuid: str, dev: str) -> dict[str, int]:
        def read(conn: Any) -> dict[str, int]:
            dom = conn.lookupByUUIDString(instance_uuid)
            return caps.full(dom.blockIoTune(
                dev, libvirt.VIR_DOMAIN_AFFECT_LIVE))
        return self._call(read)

    def set_iotune(self, instance_uuid: str, dev: str, limits: caps.Limits,
                   static: caps.Limits | None = None) -> None:
        def write(conn: Any) -> None:
            dom = conn.lookupByUUIDString(instance_uuid)
            sent = self._set_iotune(dom, dev, limits,
                                    libvirt.VIR_DOMAIN_AFFECT_LIVE)
            if static is not None:
                self._record(dom, dev, static, limits, sent)
        self._call(write)

    def _record(self, dom: Any, dev: str, static: caps.Limits,
                limits: caps.Limits, sent: dict[str, int]) -> None:
        """Keep iotguard's record of a cap in the domain (the module doc).

        ``sent``: the iotune set exactly as libvirt got it (the test
        driver's bursts included), which is what a domain migrated with it
        would carry in its definition.
        """
        record = parse_cap_record(dom.XMLDesc(0))
        if caps.full(limits) == caps.full(static):
            if dev not in record:
                return
            del record[dev]
        else:
            record[dev] = (caps.full(static), caps.full(sent))
        try:
            dom.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT,
                            cap_record_xml(record),
                            _METADATA_KEY if record else None,
                            METADATA_NS, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        except libvirt.libvirtError as e:
            # The cap holds; only a migration would not know it is ours.
            LOG.warning('Could not record the cap of %s/%s in the domain '
                        'metadata: %s', dom.UUIDString(), dev, e)

    def _restore_static(self, dom: Any, dev: str, static: dict[str, int]
                        ) -> bool:
        """Put the static ceiling back into the persistent definition."""
        try:
            self._set_iotune(dom, dev, static,
                             libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        except libvirt.libvirtError as e:
            LOG.warning('Could not write the static ceiling of %s/%s back '
                        'into its persistent definition (tried again next '
                        'pass): %s', dom.UUIDString(), dev, e)
            return False
        LOG.info('Wrote the static ceiling of %s/%s back into its '
                 'persistent definition (it held a cap of ours)',
                 dom.UUIDString(), dev)
        return True

    def _set_iotune(self, dom: Any, dev: str, limits: caps.Limits,
                    flags: int) -> dict[str, int]:
        """setBlockIoTune; returns the parameters libvirt took."""
        params = (caps.with_bursts(limits) if self._needs_bursts
                  else caps.full(limits))
        try:
            dom.setBlockIoTune(dev, params, flags)
        except libvirt.libvirtError as e:
            if (self._needs_bursts or '_max' not in str(e) or
                    e.get_error_code() != libvirt.VIR_ERR_INVALID_ARG):
                raise
            LOG.info('libvirt at %s wants *_max >= every value (%s); '
                     'sending bursts from now on', self.uri, e)
            self._needs_bursts = True
            params = caps.with_bursts(limits)
            dom.setBlockIoTune(dev, params, flags)
        return params
