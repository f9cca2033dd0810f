# The `sightline` command-line tool in a small runtime image, for the scale-out jobs in deploy/
# (Kubernetes Indexed Job, Slurm array through Apptainer). See deploy/README.md.
#
#   docker build -t registry.example.com/sightline:0.1.0 .
#   docker run --rm registry.example.com/sightline:0.1.0 precompute --scene village --out /tmp/v.slt
#
# The runtime stage carries Mesa's lavapipe, a Vulkan driver running on the CPU, so the GPU
# code paths run on any node. On NVIDIA nodes the NVIDIA container toolkit mounts the driver's
# Vulkan files (NVIDIA_DRIVER_CAPABILITIES below asks for them) and `sightline` uses the GPU.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin sightline \
    && strip target/release/sightline \
    && cp target/release/sightline /usr/local/bin/sightline

FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libvulkan1 mesa-vulkan-drivers \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/sightline /usr/local/bin/sightline
RUN groupadd --gid 10001 sightline \
    && useradd --uid 10001 --gid 10001 --create-home sightline
USER 10001:10001
WORKDIR /home/sightline
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics
ENTRYPOINT ["/usr/local/bin/sightline"]
CMD ["--help"]
