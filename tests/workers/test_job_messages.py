"""Jobs sent by their task's name (explorer/queues.py, so that the web app need not import
workers/): each message lands on the queue, and carries the options, that the task's own
`apply_async` gives it. Read back from a real Redis."""
import base64
import json

import pytest
import redis

from explorer import queues
from workers.tasks import compile_run, measure_run

# A database of the session's Redis that no worker of the suite consumes.
DATABASE = 7


@pytest.fixture
def broker(redis_url: str):
    url = f"{redis_url.rsplit('/', 1)[0]}/{DATABASE}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url, client
    client.flushdb()


def _messages(client: redis.Redis, queue: str) -> list[dict]:
    """The queue's messages, oldest first, without what differs from one message to the next
    (ids, the sender's process and host)."""
    found = []
    for raw in reversed(client.lrange(queue, 0, -1)):
        message = json.loads(raw)
        headers = {key: value for key, value in message["headers"].items()
                   if key not in ("id", "root_id", "origin")}
        body = json.loads(base64.b64decode(message["body"]))
        properties = {key: value for key, value in message["properties"].items()
                      if key not in ("correlation_id", "delivery_tag", "reply_to")}
        found.append({"headers": headers, "body": body, "properties": properties})
    return found


@pytest.mark.parametrize(("task", "queue"), [(compile_run, "compile"), (measure_run, "gpu")])
def test_a_job_sent_by_name_is_the_message_its_task_would_send(broker, task, queue):
    url, client = broker
    with queues.app.connection_for_write(url) as connection:
        task.apply_async((41,), connection=connection)
        queues.send_job(task.name, 41, connection=connection)

    by_task, by_name = _messages(client, queue)
    assert by_name == by_task
    assert by_name["headers"]["task"] == task.name
    assert by_name["headers"]["timelimit"] == [task.time_limit, task.soft_time_limit]
    assert by_name["headers"]["ignore_result"] is True
    assert queues.queue_of(task.name) == queue
