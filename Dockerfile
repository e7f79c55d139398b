# Berth's image for those who build with Docker. `scripts/image` builds the same image without a
# container engine (mmdebstrap, umoci, skopeo), reproducibly; tests/image/test_image.py checks that
# the two agree on the user, the entrypoint, the environment, the working directory, the volume and
# the ports.
#
#   docker build -t berth:0.1.0 .

FROM debian:bookworm-slim AS wheels
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN python3 -m venv /build && /build/bin/pip wheel --no-cache-dir --wheel-dir /wheels /src

FROM debian:bookworm-slim
# libstdc++6: greenlet, which SQLAlchemy's asyncio layer needs, links against it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv libstdc++6 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=wheels /wheels /tmp/wheels
RUN python3 -m venv /opt/berth \
 && /opt/berth/bin/pip install --no-index --no-cache-dir --find-links /tmp/wheels berth \
 && rm -rf /tmp/wheels \
 && echo 'berth:x:65532:65532:Berth:/home/berth:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'berth:x:65532:' >> /etc/group \
 && mkdir -p /home/berth /data \
 && chown 65532:65532 /home/berth /data \
 && chmod 0700 /data
USER 65532:65532
WORKDIR /home/berth
ENV PATH=/opt/berth/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV HOME=/home/berth
ENV BERTH_DATA_DIR=/data
ENV PYTHONDONTWRITEBYTECODE=1
VOLUME /data
EXPOSE 8080/tcp 9443/tcp
ENTRYPOINT ["/opt/berth/bin/berth"]
CMD ["run"]
