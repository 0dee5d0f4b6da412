"""The exporter of the external_memory backend: Vulkan allocates exportable memory and semaphores.

Vulkan is the vendor-neutral exporter GL and CL both import from (opaque fd). Per the Vulkan
spec (VK_KHR_external_memory_fd), each vkGetMemoryFdKHR call returns a new fd owned by the
application; destroying the Vulkan memory object does not remove the fd's reference to the payload.
"""
from __future__ import annotations

import logging
import os

from app.diagnostics import live
from app.errors import SharingUnavailable

log = logging.getLogger(__name__)

DEVICE_EXTENSIONS = ["VK_KHR_external_memory", "VK_KHR_external_memory_fd",
                     "VK_KHR_external_semaphore", "VK_KHR_external_semaphore_fd"]


def _vk():
    try:
        import vulkan as vk  # optional dependency group "vulkan"
    except ImportError as exc:
        raise SharingUnavailable("external_memory", "the 'vulkan' Python package is not installed "
                                 "(pip install 'glshare[vulkan]')") from exc
    except OSError as exc:
        raise SharingUnavailable("external_memory", f"no Vulkan loader (libvulkan.so.1): {exc}") from exc
    return vk


def _keeps_gl_current(fn):
    """Run a Vulkan call with the caller's GL context made current again afterwards (see
    app.window.preserve_current_context: NVIDIA's driver 580 drops it)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from app.window import preserve_current_context

        with preserve_current_context():
            return fn(*args, **kwargs)

    return wrapper


class VulkanExporter:
    """A Vulkan instance and device on the GPU that CL runs on (matched by UUID where both tell it)."""

    @_keeps_gl_current
    def __init__(self, cl_device_uuid: bytes | None = None) -> None:
        vk = self.vk = _vk()
        app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, pApplicationName="glshare",
                                   applicationVersion=1, pEngineName="glshare", engineVersion=1,
                                   apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
        try:
            self.instance = vk.vkCreateInstance(
                vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
        except Exception as exc:  # noqa: BLE001 - vulkan raises its own VkError family
            raise SharingUnavailable("external_memory", f"vkCreateInstance failed: {type(exc).__name__}") from exc
        try:
            self.physical, self.device_name, self.uuid = self._pick(cl_device_uuid)
            qci = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                             queueFamilyIndex=0, queueCount=1, pQueuePriorities=[1.0])
            self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, queueCreateInfoCount=1, pQueueCreateInfos=[qci],
                enabledExtensionCount=len(DEVICE_EXTENSIONS), ppEnabledExtensionNames=DEVICE_EXTENSIONS), None)
        except SharingUnavailable:
            vk.vkDestroyInstance(self.instance, None)
            raise
        except Exception as exc:  # noqa: BLE001
            vk.vkDestroyInstance(self.instance, None)
            raise SharingUnavailable("external_memory", f"vkCreateDevice with external memory/semaphore fd "
                                     f"extensions failed: {type(exc).__name__}: {exc}") from exc
        self._get_memory_fd = vk.vkGetDeviceProcAddr(self.device, "vkGetMemoryFdKHR")
        self._get_semaphore_fd = vk.vkGetDeviceProcAddr(self.device, "vkGetSemaphoreFdKHR")
        props = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        local = [i for i in range(props.memoryTypeCount)
                 if props.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
        if not local:
            self.close()
            raise SharingUnavailable("external_memory", f"{self.device_name} has no device-local memory type")
        self.memory_types = props
        self._closed = False
        live.created("vk_device", "vulkan")

    def _pick(self, cl_uuid: bytes | None):
        vk = self.vk
        devices = vk.vkEnumeratePhysicalDevices(self.instance)
        if not devices:
            raise SharingUnavailable("external_memory", "Vulkan found no physical device")
        candidates = []
        for pd in devices:
            idp = vk.VkPhysicalDeviceIDProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES)
            p2 = vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=idp)
            vk.vkGetPhysicalDeviceProperties2(pd, p2)
            uuid = bytes(idp.deviceUUID)
            name = vk.ffi.string(p2.properties.deviceName).decode() if hasattr(vk, "ffi") else str(p2.properties.deviceName)
            exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
            if all(e in exts for e in DEVICE_EXTENSIONS):
                candidates.append((pd, name, uuid, p2.properties.deviceType))
        if not candidates:
            raise SharingUnavailable("external_memory", "no Vulkan device offers VK_KHR_external_memory_fd and "
                                     "VK_KHR_external_semaphore_fd")
        if cl_uuid:
            same = [c for c in candidates if c[2] == cl_uuid]
            if same:
                return same[0][:3]
            raise SharingUnavailable("external_memory", "no Vulkan device has the CL device's UUID "
                                     "(memory would cross GPUs)")
        candidates.sort(key=lambda c: c[3] != vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)
        return candidates[0][:3]

    # -- memory -----------------------------------------------------------------------------------
    @_keeps_gl_current
    def allocate(self, nbytes: int) -> tuple[object, object, int]:
        """An exportable device-local allocation bound to a buffer: (buffer, memory, size)."""
        vk = self.vk
        ext = vk.VkExternalMemoryBufferCreateInfo(sType=vk.VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                  handleTypes=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT)
        buf = vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, pNext=ext, size=nbytes,
            usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        req = vk.vkGetBufferMemoryRequirements(self.device, buf)
        props = self.memory_types
        index = next(i for i in range(props.memoryTypeCount)
                     if req.memoryTypeBits & (1 << i)
                     and props.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
        export = vk.VkExportMemoryAllocateInfo(sType=vk.VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                               handleTypes=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT)
        mem = vk.vkAllocateMemory(self.device, vk.VkMemoryAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, pNext=export, allocationSize=req.size,
            memoryTypeIndex=index), None)
        vk.vkBindBufferMemory(self.device, buf, mem, 0)
        live.created("vk_memory", "external_memory")
        return buf, mem, int(req.size)

    @_keeps_gl_current
    def memory_fd(self, memory) -> int:
        vk = self.vk
        return int(self._get_memory_fd(self.device, vk.VkMemoryGetFdInfoKHR(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR, memory=memory,
            handleType=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT)))

    @_keeps_gl_current
    def free(self, buffer, memory) -> None:
        self.vk.vkDestroyBuffer(self.device, buffer, None)
        self.vk.vkFreeMemory(self.device, memory, None)
        live.released("vk_memory", "external_memory")

    # -- semaphores -------------------------------------------------------------------------------
    @_keeps_gl_current
    def semaphore(self) -> tuple[object, int]:
        """An exportable binary semaphore and an fd for it (the application's to hand on or close)."""
        vk = self.vk
        export = vk.VkExportSemaphoreCreateInfo(sType=vk.VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                                handleTypes=vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT)
        sem = vk.vkCreateSemaphore(self.device, vk.VkSemaphoreCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, pNext=export), None)
        fd = int(self._get_semaphore_fd(self.device, vk.VkSemaphoreGetFdInfoKHR(
            sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, semaphore=sem,
            handleType=vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT)))
        live.created("vk_semaphore", "external_memory")
        return sem, fd

    @_keeps_gl_current
    def destroy_semaphore(self, sem) -> None:
        self.vk.vkDestroySemaphore(self.device, sem, None)
        live.released("vk_semaphore", "external_memory")

    @_keeps_gl_current
    def close(self) -> None:
        if getattr(self, "_closed", True) is False:
            live.released("vk_device", "vulkan")
        self._closed = True
        device, self.device = getattr(self, "device", None), None
        if device is not None:
            self.vk.vkDestroyDevice(device, None)
        instance, self.instance = getattr(self, "instance", None), None
        if instance is not None:
            self.vk.vkDestroyInstance(instance, None)


_SHARED: dict[bytes | None, VulkanExporter] = {}


def shared_exporter(cl_device_uuid: bytes | None = None) -> VulkanExporter:
    """The process's one exporter per GPU, made at first use and kept.

    NVIDIA's driver 580 leaves file descriptors of its own open after vkDestroyInstance for each
    Vulkan instance + device it creates, so an exporter per backend (one per backend switch) would
    make the process's fd count grow with every switch. One exporter per process is also cheaper:
    instance creation is the slow part of the probe.
    """
    exporter = _SHARED.get(cl_device_uuid)
    if exporter is None:
        exporter = _SHARED[cl_device_uuid] = VulkanExporter(cl_device_uuid)
    return exporter


def close_fd(fd: int) -> bool:
    """Close an fd we own; False when it was already closed (an importer took ownership)."""
    try:
        os.close(fd)
        return True
    except OSError:
        return False
