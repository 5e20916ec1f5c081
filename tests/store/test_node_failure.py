from fieldguide.weaviate_nodes import is_node_failure


def test_a_peer_torn_down_under_a_query_counts_as_a_node_failure():
    torn = RuntimeError("Unexpected status code: 500, with response body: {'error': [{'message': "
                        "'failed to execute query: rpc error: code = Canceled desc = grpc: the client "
                        "connection is closing'}]}")
    assert is_node_failure(torn)
    assert is_node_failure(RuntimeError('grpc_message:"Socket closed", grpc_status:14'))


def test_a_node_still_loading_its_shards_counts_as_a_node_failure():
    """Right after a start a node knows the schema but not yet the shards: the reader gets "no node
    answered" (a clear error, or the next node), not the query's traceback."""
    loading = RuntimeError('details = "explorer: list class: search: tried to browse non-existing index for '
                           'DocsManifest"')
    assert is_node_failure(loading)


def test_a_refused_request_is_not_a_node_failure():
    assert not is_node_failure(RuntimeError("Unexpected status code: 422: invalid where filter"))
