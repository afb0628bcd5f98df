"""The real client against the emulator: kubernetes-asyncio must not notice the difference."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from volsched.emulator import ApiServer, write_kubeconfig


async def test_kubernetes_asyncio_lists_watches_and_binds(
    server: ApiServer, tmp_path: Path
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    assert configuration.host == server.url
    async with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1")))
        nodes = await core.list_node()
        assert [n.metadata.name for n in nodes.items] == ["n1"]
        since = nodes.metadata.resource_version

        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name="p1"),
            spec=client.V1PodSpec(
                containers=[client.V1Container(name="main", image="busybox")],
                scheduler_name="volsched",
            ),
        )
        await core.create_namespaced_pod("default", pod)
        unbound = await core.list_namespaced_pod(
            "default", field_selector="spec.nodeName=,spec.schedulerName=volsched"
        )
        assert [p.metadata.name for p in unbound.items] == ["p1"]

        seen = []
        async with watch.Watch() as stream:
            async for event in stream.stream(
                core.list_namespaced_pod, "default", resource_version=since, timeout_seconds=1
            ):
                seen.append((event["type"], event["object"].metadata.name))
                stream.stop()
        assert seen == [("ADDED", "p1")]

        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(name="p1"),
            target=client.V1ObjectReference(kind="Node", name="n1"),
        )
        response = await core.create_namespaced_binding("default", binding, _preload_content=False)
        try:
            assert response.status == 201
            assert (await response.json())["status"] == "Success"
        finally:
            response.release()
        bound = await core.read_namespaced_pod("p1", "default")
        assert bound.spec.node_name == "n1"

        # A second binding is a 409 ApiException; deserialising the 201 Status as a
        # Binding is the ValueError a client must expect without _preload_content=False.
        with pytest.raises(ApiException) as conflict:
            await core.create_namespaced_pod_binding("p1", "default", binding)
        assert conflict.value.status == 409
        await core.create_namespaced_pod(
            "default", client.V1Pod(metadata=client.V1ObjectMeta(name="p2"), spec=pod.spec)
        )
        binding.metadata.name = "p2"
        with pytest.raises(ValueError):
            await core.create_namespaced_pod_binding("p2", "default", binding)
        assert (await core.read_namespaced_pod("p2", "default")).spec.node_name == "n1"


async def test_kubernetes_asyncio_sees_410_after_compaction(
    server: ApiServer, tmp_path: Path
) -> None:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(write_kubeconfig(tmp_path / "kubeconfig", server.url)),
        client_configuration=configuration,
    )
    async with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        nodes = await core.list_node()
        await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1")))
        server.faults.compact()
        with pytest.raises(ApiException) as expired:
            async with watch.Watch() as stream:
                async for _ in stream.stream(
                    core.list_node,
                    resource_version=nodes.metadata.resource_version,
                    timeout_seconds=1,
                ):
                    pass
        assert expired.value.status == 410


async def test_kubernetes_asyncio_patches_and_conflicts(server: ApiServer, tmp_path: Path) -> None:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(write_kubeconfig(tmp_path / "kubeconfig", server.url)),
        client_configuration=configuration,
    )
    async with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        volume = client.V1PersistentVolume(
            metadata=client.V1ObjectMeta(name="pv-1"),
            spec=client.V1PersistentVolumeSpec(
                capacity={"storage": "1Gi"},
                access_modes=["ReadWriteOnce"],
                host_path=client.V1HostPathVolumeSource(path="/x"),
            ),
        )
        created = await core.create_persistent_volume(volume)
        patched = await core.patch_persistent_volume("pv-1", {"metadata": {"labels": {"a": "b"}}})
        assert patched.metadata.labels == {"a": "b"}
        with pytest.raises(ApiException) as conflict:
            await core.replace_persistent_volume("pv-1", created)
        assert conflict.value.status == 409
        custom = client.CustomObjectsApi(api_client)
        with pytest.raises(ApiException) as missing:
            await custom.list_cluster_custom_object("volsched.io", "v1alpha1", "volumes")
        assert missing.value.status == 404


async def test_kubernetes_asyncio_resumes_after_a_cut_watch(
    server: ApiServer, tmp_path: Path
) -> None:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(write_kubeconfig(tmp_path / "kubeconfig", server.url)),
        client_configuration=configuration,
    )
    async with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1")))
        names = []
        async with watch.Watch() as stream:
            # No timeout_seconds: the client reconnects by itself from its last version.
            async for event in stream.stream(core.list_node, resource_version="0"):
                names.append(event["object"].metadata.name)
                if len(names) == 1:
                    server.faults.cut_watches()
                    await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n2")))
                else:
                    stream.stop()
                    break
        assert names == ["n1", "n2"]
        watches = server.faults.requests("GET", r"watch=True")
        assert len(watches) == 2 and "resourceVersion=0" not in watches[1].query
